package shmem

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"unsafe"
)

func init() { roles["nap"] = roleNap }

// TestWaitNaps: a wait that outlasts its spinning budget stops driving the
// engine and sleeps between looks at memory (a PE that waits long must leave
// the CPU to the PEs that work), and still sees the store it waits for.
func TestWaitNaps(t *testing.T) { testRole(t, "nap") }

// roleNap: PE 0 waits for a flag with no spinning budget; PE 1 sets the flag
// only once it has read (by gets from PE 0's heap) that PE 0's wait napped
// three times. PE 0 checks that its wait never spun.
func roleNap(ctx context.Context, w *World) error {
	flag, err := Calloc[uint64](ctx, w, 1)
	if err != nil {
		return err
	}
	naps, err := Calloc[uint64](ctx, w, 1)
	if err != nil {
		return err
	}
	c := w.Ctx()
	switch w.MyPE() {
	case 0:
		w.spinFor = 0
		word := (*uint64)(unsafe.Pointer(&naps.Local()[0]))
		w.onNap = func() { atomic.StoreUint64(word, w.naps.Load()) }
		spins := w.spins.Load()
		err := WaitUntil(ctx, flag, CmpEQ, 1)
		w.onNap = nil
		w.spinFor = defaultSpinFor
		if err != nil {
			return err
		}
		if n := w.spins.Load() - spins; n != 0 {
			return fmt.Errorf("the wait spun %d times with no spinning budget", n)
		}
		if n := atomic.LoadUint64(word); n < 3 {
			return fmt.Errorf("the wait napped %d times before the flag came", n)
		}
	case 1:
		for {
			n, err := G(ctx, c, naps, 0)
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
