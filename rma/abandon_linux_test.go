package rma_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/goportals/goportals/rma"
)

func init() {
	scenarios["abandon"] = abandon
	scenarios["flushafterfailure"] = flushAfterFailure
}

func TestAbandon2(t *testing.T)           { launch(t, "abandon", 2) }
func TestFlushAfterFailure3(t *testing.T) { launch(t, "flushafterfailure", 3) }

// abandon: calls whose context ends while the target cannot answer (rank 0 stops
// rank 1's process with SIGSTOP) return the context's error; the operations stay
// tracked, a Flush while the target is still stopped reports the context's error
// too, and once the target runs again Flush completes them all: the abandoned
// WriteAt and the Put land.
func abandon(ctx context.Context) error {
	mem := make([]byte, 64)
	w, err := rma.Open(ctx, mem)
	if err != nil {
		return err
	}
	defer w.Close(ctx)
	if w.Rank() == 1 {
		pid := binary.NativeEndian.AppendUint64(nil, uint64(os.Getpid()))
		if err := w.WriteAt(ctx, 0, pid, 0); err != nil {
			return err
		}
		if err := w.Barrier(ctx); err != nil { // 1: rank 0 knows our pid
			return err
		}
		if err := w.Barrier(ctx); err != nil { // 2: stopped and continued in here
			return err
		}
		if got := string(mem[8:24]); got != "abandon!put-data" {
			return fmt.Errorf("rank 1's memory holds %q, want the abandoned write and the put", got)
		}
		return w.Close(ctx)
	}
	if w.Rank() != 0 {
		return w.Barrier(ctx) // only the first two ranks take part
	}
	if err := w.Barrier(ctx); err != nil { // 1
		return err
	}
	peer := int(binary.NativeEndian.Uint64(mem))
	if err := syscall.Kill(peer, syscall.SIGSTOP); err != nil {
		return err
	}
	defer syscall.Kill(peer, syscall.SIGCONT) // never leave it stopped
	if err := waitStopped(ctx, peer); err != nil {
		return err
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err = w.WriteAt(short, 1, []byte("abandon!"), 8)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("WriteAt to a stopped process: %v, want the context's deadline", err)
	}
	if err := w.Put(1, []byte("put-data"), 16); err != nil {
		return err
	}
	short, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
	err = w.Flush(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("Flush while the target is stopped: %v, want the context's deadline", err)
	}
	if err := syscall.Kill(peer, syscall.SIGCONT); err != nil {
		return err
	}
	if err := w.Flush(ctx); err != nil {
		return fmt.Errorf("Flush once the target runs again: %w", err)
	}
	back := make([]byte, 16)
	if err := w.ReadAt(ctx, 1, back, 8); err != nil {
		return err
	}
	if !bytes.Equal(back, []byte("abandon!put-data")) {
		return fmt.Errorf("rank 1's memory reads %q after Flush", back)
	}
	if err := w.Barrier(ctx); err != nil { // 2
		return err
	}
	return w.Close(ctx)
}

// waitStopped waits until process pid is stopped: kill returns before the signal
// has taken effect.
func waitStopped(ctx context.Context, pid int) error {
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return err
		}
		// The state follows the command name, which is in parentheses.
		if i := bytes.LastIndexByte(b, ')'); i > 0 && i+2 < len(b) && b[i+2] == 'T' {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("process %d never stopped: %w", pid, ctx.Err())
		case <-time.After(time.Millisecond):
		}
	}
}

// flushAfterFailure: once a Put has failed (rank 2 exited), Flush still waits for
// every later Put: with rank 1 stopped, a Flush of a Put to it runs into its
// context's deadline instead of returning at once, and completes once rank 1 runs
// again.
func flushAfterFailure(ctx context.Context) error {
	mem := make([]byte, 64)
	w, err := rma.Open(ctx, mem)
	if err != nil {
		return err
	}
	switch w.Rank() {
	case 1:
		pid := binary.NativeEndian.AppendUint64(nil, uint64(os.Getpid()))
		if err := w.WriteAt(ctx, 0, pid, 0); err != nil {
			return err
		}
		// Rank 0's Put, its ReadAt and its last WriteAt ("done"): then it is done
		// with us. Wait for the bytes, not only a count, so no arrival counted
		// differently lets us leave before the last write.
		for n := uint64(3); ; n++ {
			if err := w.WaitArrivals(ctx, n); err != nil {
				return err
			}
			if string(mem[32:36]) == "done" {
				return nil
			}
		}
	case 2:
		return nil // leave at once: the process ends with its window open
	}
	for {
		if err := w.Put(2, []byte("anyone?"), 8); err != nil {
			return err
		}
		if err = w.Flush(ctx); err != nil {
			break
		}
	}
	if !errors.Is(err, rma.ErrRemote) {
		return fmt.Errorf("Flush of a Put to a rank that exited: %v, want ErrRemote", err)
	}
	if err := w.WaitArrivals(ctx, 1); err != nil { // rank 1's pid
		return err
	}
	peer := int(binary.NativeEndian.Uint64(mem))
	if err := syscall.Kill(peer, syscall.SIGSTOP); err != nil {
		return err
	}
	defer syscall.Kill(peer, syscall.SIGCONT) // never leave it stopped
	if err := waitStopped(ctx, peer); err != nil {
		return err
	}
	if err := w.Put(1, []byte("after a failure"), 8); err != nil {
		return err
	}
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	err = w.Flush(short)
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("Flush of a Put to a stopped process, after an earlier failure: %v, want the context's deadline", err)
	}
	if err := syscall.Kill(peer, syscall.SIGCONT); err != nil {
		return err
	}
	if err := w.Flush(ctx); err != nil {
		return fmt.Errorf("Flush once the target runs again: %w", err)
	}
	back := make([]byte, 15)
	if err := w.ReadAt(ctx, 1, back, 8); err != nil {
		return err
	}
	if string(back) != "after a failure" {
		return fmt.Errorf("rank 1's memory reads %q after Flush", back)
	}
	return w.WriteAt(ctx, 1, []byte("done"), 32)
}
