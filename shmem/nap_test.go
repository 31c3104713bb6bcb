package shmem

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/goportals/goportals/internal/envknob"
)

func init() {
	roles["nap"] = roleNap
	roles["napclose"] = roleNapClose
	closeMayFail["napclose"] = true // the role closes the World itself
}

// TestWaitNaps: a wait that outlasts its spinning budget stops driving the
// engine and sleeps between looks at memory (a PE that waits long must leave
// the CPU to the PEs that work), and still sees the store it waits for.
func TestWaitNaps(t *testing.T) { testRole(t, "nap") }

// TestWaitNapsEngine: the same with every operation through the target's
// engine: while a wait naps, the NI's progress goroutine serves the requests
// that reach the PE (here the gets that watch it, and the put it waits for).
func TestWaitNapsEngine(t *testing.T) {
	launch(t, "nap", 2, string(envknob.Direct)+"=off")
}

// TestWaitNoProgressGoroutine: without progress goroutines
// (PTL_PROGRESS_GOROUTINE=0) a wait never naps, however long it lasts: only
// the waiting PE's own calls progress its engine, and the other PE's gets and
// put through it would never be answered.
func TestWaitNoProgressGoroutine(t *testing.T) {
	launch(t, "nap", 2, string(envknob.Direct)+"=off", string(envknob.ProgressGoroutine)+"=0")
}

// countingTransport counts the reads of the target counter.
type countingTransport struct {
	transport
	reads atomic.Uint64
}

func (c *countingTransport) targetCount() (uint64, error) {
	c.reads.Add(1)
	return c.transport.targetCount()
}

// TestWaitNapsThroughClose: a wait that naps while another goroutine closes
// the World returns ErrClosed; it does not look at the heap, which is gone.
func TestWaitNapsThroughClose(t *testing.T) { launch(t, "napclose", 2) }

// roleNapClose: on every PE, a goroutine waits for a flag nobody sets, with no
// spinning budget; once it napped twice, the PE closes the World.
func roleNapClose(ctx context.Context, w *World) error {
	flag, err := Calloc[uint64](ctx, w, 1)
	if err != nil {
		return err
	}
	w.spinFor = 0
	var rounds atomic.Uint64
	w.onRound = func() { rounds.Add(1) }
	res := make(chan error, 1)
	go func() { res <- WaitUntil(ctx, flag, CmpEQ, 1) }()
	for rounds.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	cerr := w.Close(ctx)
	werr := <-res
	if cerr != nil {
		return cerr
	}
	if !errors.Is(werr, ErrClosed) {
		return fmt.Errorf("a wait through Close returned %v, want ErrClosed", werr)
	}
	return nil
}

// roleNap: PE 0 waits for a flag with no spinning budget; PE 1 sets the flag
// only once it has read (by gets from PE 0's heap) that PE 0's wait looked at
// memory three times. PE 0 checks how it waited: by naps only, or, without
// progress goroutines, by driving the engine only.
func roleNap(ctx context.Context, w *World) error {
	flag, err := Calloc[uint64](ctx, w, 1)
	if err != nil {
		return err
	}
	rounds, err := Calloc[uint64](ctx, w, 1)
	if err != nil {
		return err
	}
	c := w.Ctx()
	switch w.MyPE() {
	case 0:
		w.spinFor = 0
		word := (*uint64)(unsafe.Pointer(&rounds.Local()[0]))
		spins0, naps0 := w.spins.Load(), w.naps.Load()
		w.onRound = func() { atomic.StoreUint64(word, w.spins.Load()-spins0+w.naps.Load()-naps0) }
		ct := &countingTransport{transport: w.t}
		w.t = ct
		err := WaitUntil(ctx, flag, CmpEQ, 1)
		w.t = ct.transport
		w.onRound = nil
		w.spinFor = defaultSpinFor
		if err != nil {
			return err
		}
		spins, naps, reads := w.spins.Load()-spins0, w.naps.Load()-naps0, ct.reads.Load()
		if os.Getenv(string(envknob.ProgressGoroutine)) == "0" {
			if naps != 0 || spins < 3 {
				return fmt.Errorf("without progress goroutines the wait napped %d times and drove the engine %d times", naps, spins)
			}
		} else if spins != 0 || naps < 3 {
			return fmt.Errorf("with no spinning budget the wait drove the engine %d times and napped %d times", spins, naps)
		} else if reads != 0 {
			// Reading the counter drives progress, which tells the NI's
			// progress goroutine that the application polls: it would step
			// aside while nobody polls.
			return fmt.Errorf("a napping wait read the target counter %d times", reads)
		}
	case 1:
		for {
			n, err := G(ctx, c, rounds, 0)
			if err != nil {
				return err
			}
			if n >= 3 {
				break
			}
		}
		if err := P(ctx, c, flag, 1, 0); err != nil {
			return err
		}
		if err := c.Quiet(ctx); err != nil {
			return err
		}
	}
	return w.BarrierAll(ctx)
}
