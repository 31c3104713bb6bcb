package soft

import (
	"encoding/binary"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

// a corrupt header with a huge length: drain refuses it, then consume(m.len)
// walks 67M slots (and moves the tail 67M positions).
func TestRegressionCorruptLength(t *testing.T) {
	p := verbstest.NewPair(t, softEnv)
	a := p.A.QP.(*qp)
	a.mu.Lock()
	r := a.out
	pos := r.head
	h := r.slots[(pos%ringSlots)*slotSize:]
	h[hOp] = opSend
	binary.LittleEndian.PutUint32(h[hLen:], 0xffffffff)
	atomic.StoreUint64(r.seqWord(pos), pos+1)
	a.mu.Unlock()
	waitFor(t, "B refusing the corrupt header", 10*time.Second, func() bool {
		var wc [1]verbs.WorkCompletion
		if _, err := p.B.CQ.Poll(wc[:]); err != nil {
			t.Fatal(err)
		}
		return p.B.QP.State() != verbs.QPReady
	})
	if got := atomic.LoadUint64(r.tail); got != pos+1 {
		t.Fatalf("B moved its tail to %d after refusing one corrupt header at %d, want %d", got, pos, pos+1)
	}
}

// Context.Close racing with RegMR: RegMR passed its closed check, Close unmaps the
// segment, RegMR stores into the unmapped MR table.
func TestRegressionCloseVsRegMR(t *testing.T) {
	for i := 0; i < 300; i++ {
		c, err := Open()
		if err != nil {
			t.Fatal(err)
		}
		pd, err := c.AllocPD()
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4096)
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 50; j++ {
				m, err := pd.RegMR(buf, verbs.AccessLocalWrite)
				if err != nil {
					return
				}
				m.Dereg()
				runtime.Gosched()
			}
		}()
		runtime.Gosched()
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
	}
}
