package shmem

import (
	"context"
	"testing"

	"github.com/goportals/goportals/internal/envknob"
)

func init() { roles["testpoll"] = roleTestPoll }

// TestTestPollsWithoutProgressGoroutine: without progress goroutines
// (PTL_PROGRESS_GOROUTINE=0) progress happens only in the calls that wait or
// poll, and Test is shmem's poll: a PE that polls with Test* until another PE
// wrote a flag must answer the requests that PE sends it meanwhile (here a
// get from its heap, through the engine, before the flag's put), or both wait
// forever.
func TestTestPollsWithoutProgressGoroutine(t *testing.T) {
	launch(t, "testpoll", 2, string(envknob.Direct)+"=off", string(envknob.ProgressGoroutine)+"=0")
}

func roleTestPoll(ctx context.Context, w *World) error {
	flags, err := Calloc[uint64](ctx, w, 4)
	if err != nil {
		return err
	}
	word, err := Calloc[uint64](ctx, w, 1)
	if err != nil {
		return err
	}
	c := w.Ctx()
	switch w.MyPE() {
	case 0:
		// Each of the four calls polls until PE 1's put of its flag.
		for k := 0; k < 4; k++ {
			for {
				var ok bool
				f := flags.Slice(k, k+1)
				switch k {
				case 0:
					ok, err = Test(f, CmpEQ, 1)
				case 1:
					ok, err = TestAll(f, CmpEQ, 1)
				case 2:
					var i int
					i, err = TestAny(f, CmpEQ, 1)
					ok = i == 0
				case 3:
					var idx []int
					idx, err = TestSome(f, CmpEQ, 1)
					ok = len(idx) == 1
				}
				if err != nil {
					return err
				}
				if ok {
					break
				}
				if err := ctx.Err(); err != nil {
					return err
				}
			}
		}
	case 1:
		for k := 0; k < 4; k++ {
			// A get from PE 0's heap needs PE 0's engine (PTL_DIRECT=off).
			if _, err := G(ctx, c, word, 0); err != nil {
				return err
			}
			if err := P(ctx, c, flags.At(k), 1, 0); err != nil {
				return err
			}
			if err := c.Quiet(ctx); err != nil {
				return err
			}
		}
	}
	return w.BarrierAll(ctx)
}
