package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
)

// The busy host of -compare -busy: a third process that keeps one core busy
// (the last one, where the kernel lets us pin it) while goportals and the peers
// are measured, as other work does on a user's node.

// spinner is a running busy-host process.
type spinner struct {
	h   *helper
	cpu string // the core it is pinned to, or "any"
}

// startSpinner starts the spinner and returns once it spins.
func startSpinner(ctx context.Context) (*spinner, error) {
	h, greeting, err := startHelper(ctx, helperSpin)
	if err != nil {
		return nil, err
	}
	cpu, ok := strings.CutPrefix(greeting, "spinning on cpu ")
	if !ok {
		return nil, fmt.Errorf("spinner's greeting %q", greeting)
	}
	return &spinner{h: h, cpu: cpu}, nil
}

// stop ends the spinner; it does nothing on nil.
func (s *spinner) stop() error {
	if s == nil || s.h == nil {
		return nil
	}
	h := s.h
	s.h = nil
	return h.stop()
}

// serveSpin is the spinner: it pins its spinning thread to one core, says
// "spinning on cpu N" (or "any"), and spins until in ends.
func serveSpin(in io.Reader, out io.Writer) error {
	stop := make(chan struct{})
	go func() {
		io.Copy(io.Discard, in)
		close(stop)
	}()
	runtime.LockOSThread()
	cpu, err := pinToLastCPU()
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintf(out, "spinning on cpu %s\n", cpu); err != nil {
		return err
	}
	if f, ok := out.(*os.File); ok {
		f.Sync()
	}
	for i := uint64(0); ; i++ {
		if i&(1<<20-1) == 0 {
			select {
			case <-stop:
				return nil
			default:
			}
		}
	}
}
