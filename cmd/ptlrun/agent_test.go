package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestAgentStopsOnSIGTERM: `ptlrun -agent` ends, with status 0, when SIGTERM (or
// SIGINT) arrives, as main delivers them on the signal channel.
func TestAgentStopsOnSIGTERM(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			key := filepath.Join(t.TempDir(), "agent.key")
			sigs := make(chan os.Signal, 1)
			var stdout, stderr syncBuffer
			done := make(chan int, 1)
			go func() {
				done <- run(context.Background(), []string{"-agent", "127.0.0.1:0", "-agent-key-file", key}, &stdout, &stderr, sigs)
			}()
			for !strings.Contains(stdout.String(), "listening at") {
				select {
				case code := <-done:
					t.Fatalf("the agent ended at once with %d: %s", code, stderr.String())
				case <-time.After(10 * time.Millisecond):
				}
			}
			sigs <- sig
			select {
			case code := <-done:
				if code != 0 {
					t.Fatalf("agent stopped by %v: status %d, want 0 (%s)", sig, code, stderr.String())
				}
			case <-time.After(time.Minute): // a hang guard, not a measurement
				t.Fatalf("the agent ignored %v", sig)
			}
		})
	}
}
