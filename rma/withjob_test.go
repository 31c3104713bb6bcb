package rma_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/goportals/goportals/job"
	"github.com/goportals/goportals/rma"
)

func init() { scenarios["withjob"] = withJob }

func TestWithJob3(t *testing.T) { launch(t, "withjob", 3) }

// TestWithJobAlone: a process alone uses package job and rma side by side.
func TestWithJobAlone(t *testing.T) {
	if err := withJob(alone(t)); err != nil {
		t.Fatal(err)
	}
}

// withJob: the program joins the job itself (package job) besides rma, and the two
// agree on the ranks; its own key-value exchanges and barriers interleave with the
// windows' collectives, before, between and after them, and each sees its own
// values only.
func withJob(ctx context.Context) error {
	jb, err := job.Join(ctx)
	if err != nil {
		return err
	}
	defer jb.Close()
	me, n := jb.Rank(), jb.Size()
	if err := jb.Put("app.before", []byte(strconv.Itoa(100+me))); err != nil {
		return err
	}
	if err := jb.Fence(ctx); err != nil {
		return err
	}
	w, err := rma.Open(ctx, make([]byte, 16+me))
	if err != nil {
		return err
	}
	if w.Rank() != me || w.Size() != n {
		return fmt.Errorf("rma says rank %d of %d, package job rank %d of %d", w.Rank(), w.Size(), me, n)
	}
	for r := range n {
		if w.Len(r) != 16+r {
			return fmt.Errorf("Len(%d) = %d, want %d", r, w.Len(r), 16+r)
		}
		v, err := jb.Get(ctx, r, "app.before")
		if err != nil {
			return err
		}
		if string(v) != strconv.Itoa(100+r) {
			return fmt.Errorf("rank %d published %q, want %d", r, v, 100+r)
		}
	}
	right := (me + 1) % n
	if err := w.WriteAt(ctx, right, []byte{byte(me + 1)}, 0); err != nil {
		return err
	}
	if err := jb.Barrier(ctx); err != nil { // the application's barrier between the window's calls
		return err
	}
	if err := w.Barrier(ctx); err != nil {
		return err
	}
	if got, want := w.Bytes()[0], byte((me+n-1)%n+1); got != want {
		return fmt.Errorf("rank %d's window holds %d, want %d", me, got, want)
	}
	if err := w.Close(ctx); err != nil {
		return err
	}
	if err := jb.Put("app.after", []byte("after")); err != nil {
		return err
	}
	if err := jb.Fence(ctx); err != nil {
		return err
	}
	if v, err := jb.Get(ctx, right, "app.after"); err != nil || string(v) != "after" {
		return fmt.Errorf("the application's key after Close: %q, %v", v, err)
	}
	return jb.Barrier(ctx) // no rank leaves while another still reads
}
