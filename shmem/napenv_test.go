package shmem

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/goportals/goportals/internal/envknob"
)

// startedWithoutProgress: this process started with PTL_PROGRESS_GOROUTINE=0
// (recorded before the napenv role changes its environment).
var startedWithoutProgress bool

func init() {
	roles["napenv"] = roleNapEnv
	if os.Getenv(roleEnv) == "napenv" {
		// The NIs read the variable once, when the process starts; a program
		// may change its environment afterwards, before Init.
		startedWithoutProgress = os.Getenv(string(envknob.ProgressGoroutine)) == "0"
		os.Setenv(string(envknob.ProgressGoroutine), "1")
	}
}

// TestWaitNoProgressGoroutineEnvChanged: a process started with
// PTL_PROGRESS_GOROUTINE=0 has NIs without a progress goroutine even if it
// changes the variable before Init; its waits must then never nap (nothing
// would answer the requests that reach the PE), and a wait whose end needs
// the PE's engine (another PE reads the PE's heap through it first) ends.
func TestWaitNoProgressGoroutineEnvChanged(t *testing.T) {
	launch(t, "napenv", 2, string(envknob.Direct)+"=off", string(envknob.ProgressGoroutine)+"=0")
}

func roleNapEnv(ctx context.Context, w *World) error {
	if !startedWithoutProgress {
		return fmt.Errorf("the role must start with %s=0", envknob.ProgressGoroutine)
	}
	if w.t.mayNap() {
		return fmt.Errorf("the NIs have no progress goroutine (%s=0 at start) but waits may nap: a wait would never end", envknob.ProgressGoroutine)
	}
	flag, err := Calloc[uint64](ctx, w, 1)
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
		w.spinFor = 0
		err := WaitUntil(ctx, flag, CmpEQ, 1)
		w.spinFor = defaultSpinFor
		if err != nil {
			return err
		}
	case 1:
		// A get from PE 0's heap needs PE 0's engine (PTL_DIRECT=off).
		if _, err := G(ctx, c, word, 0); err != nil {
			return err
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
