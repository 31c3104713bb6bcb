package main

import (
	"encoding/json"
	"testing"
)

// TestTransferWithoutProgressGoroutine: with the NIs' progress goroutines off
// (PTL_PROGRESS_GOROUTINE=0) and the ranks joined over TCP, a bandwidth test of
// long puts (the target pulls the data) still finishes: the target rank drives
// its progress while it waits in the bootstrap barrier, where rank 0 still waits
// for the ACKs of its last window.
func TestTransferWithoutProgressGoroutine(t *testing.T) {
	t.Setenv("PTL_PROGRESS_GOROUTINE", "0")
	t.Setenv("PTL_SOFT_PATH", "tcp")
	b := mustRun(t, 0, "-min", "65536", "-max", "65536", "-iters", "4", "-window", "8", "-timeout", "30s", "-json", "put_bw")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(b.stdout), &rows); err != nil || len(rows) != 1 {
		t.Fatalf("rows %v (%v):\n%s", rows, err, b.stdout)
	}
}
