package main

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cpuTicks returns the user and system CPU time of process pid, in clock ticks.
func cpuTicks(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command name (which ends with the last ')'):
	// state is field 3; utime and stime are 14 and 15.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	u, err1 := strconv.ParseUint(f[11], 10, 64)
	s, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("stat %q", b)
	}
	return u + s
}

// TestSpinner: the busy host's process spins (its CPU time grows while the test
// sleeps) on the core it names, and ends when stopped.
func TestSpinner(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads the spinner's CPU time from /proc")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := startSpinner(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.stop()
	if want := strconv.Itoa(runtime.NumCPU() - 1); s.cpu != want && runtime.NumCPU() > 1 {
		t.Logf("spinner on cpu %s (this process may run on fewer CPUs than the machine has)", s.cpu)
	}
	pid := s.h.cmd.Process.Pid
	start := cpuTicks(t, pid)
	// Spinning shows as CPU time; sleeping does not. Wait until it grew by a
	// few ticks, bounded by the context.
	for cpuTicks(t, pid) < start+5 {
		select {
		case <-ctx.Done():
			t.Fatal("the spinner used no CPU time")
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err := s.stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if s.h != nil {
		t.Fatal("stopped spinner still has its helper")
	}
	if err := s.stop(); err != nil {
		t.Fatalf("second stop: %v", err)
	}
	var none *spinner
	if err := none.stop(); err != nil {
		t.Fatalf("stop of nil: %v", err)
	}
}
