package main

import (
	"encoding/json"
	"testing"
)

// TestSendLat runs send_lat through the launcher on two ranks and on three (the
// third joins the address exchange and moves nothing): one positive latency per
// size up to the inline limit.
func TestSendLat(t *testing.T) {
	for _, np := range []string{"2", "3"} {
		b := mustRun(t, 0, "-np", np, "-min", "8", "-max", "1024", "-iters", "50", "-json", "send_lat")
		var rows []map[string]any
		if err := json.Unmarshal([]byte(b.stdout), &rows); err != nil {
			t.Fatalf("-np %s: not one JSON array of rows: %v\n%s", np, err, b.stdout)
		}
		if len(rows) != 8 { // 8, 16, ..., 1024
			t.Fatalf("-np %s: %d rows, want 8:\n%s", np, len(rows), b.stdout)
		}
		for i, r := range rows {
			if size, _ := r["size"].(float64); int(size) != 8<<i {
				t.Fatalf("-np %s: row %d has size %v, want %d", np, i, r["size"], 8<<i)
			}
			if v, _ := r[colLatency].(float64); !(v > 0) {
				t.Fatalf("-np %s: row %v has no positive %s", np, r, colLatency)
			}
		}
	}
}

// TestSendLatRefusesNonInline: a size above the inline limit is a usage error
// (status 2), not a measurement of another path.
func TestSendLatRefusesNonInline(t *testing.T) {
	b := runBench(t, "-min", "2048", "-max", "2048", "-iters", "5", "send_lat")
	if b.rc == 0 {
		t.Fatalf("send_lat of 2048 bytes succeeded:\n%s", b.stdout)
	}
}
