package main

import (
	"context"
	"io"
	"math"
	"testing"
)

// TestWarmupRoundIsDropped: -compare runs every contender once at every size
// before the measured rounds and records none of it. The first measurement of
// a run pays for the host waking up (goportals, contender 0, made it in round
// 1 of every run: its same-round ratio there had a median of 1.01x against
// fi_pingpong tcp, 0.97x–0.98x in the other rounds, 11 runs). Here each
// contender's first call returns a cold value; none of it may reach the
// samples, and the measured rounds still rotate their order.
func TestWarmupRoundIsDropped(t *testing.T) {
	calls := map[string]int{}
	var order []string
	mk := func(key, name string) *contender {
		return &contender{key: key, name: name, run: func(_ context.Context, size int, _ counts) (map[metric]float64, error) {
			calls[name]++
			order = append(order, name)
			v := 1.0
			if calls[name] <= 2 { // the first call at each of the two sizes
				v = 100
			}
			return map[metric]float64{latency: v}, nil
		}}
	}
	r := &compareRun{contenders: []*contender{mk("goportals", ours), mk("peer", "peer ping")},
		sizes: []int{8, 1 << 20}, loads: []load{quiet}, rounds: 3, warmup: 1, s: newSamples(3), log: io.Discard}
	if err := r.measure(context.Background()); err != nil {
		t.Fatal(err)
	}
	for name, n := range calls {
		if n != 2*(r.rounds+r.warmup) {
			t.Errorf("%s ran %d times, want %d (every size, in every round and the warm-up)", name, n, 2*(r.rounds+r.warmup))
		}
	}
	for _, name := range []string{ours, "peer ping"} {
		for _, size := range r.sizes {
			vals := r.s.vals[sampleKey{name, size, latency, quiet}]
			if len(vals) != r.rounds {
				t.Fatalf("%s at %d bytes: %d samples, want %d", name, size, len(vals), r.rounds)
			}
			for i, v := range vals {
				if math.IsNaN(v) || v != 1 {
					t.Errorf("%s at %d bytes, round %d: %v, want 1 (the warm-up's value is dropped)", name, size, i+1, v)
				}
			}
		}
	}
	// Measured round k (from 0) starts with contender k mod 2, as without a
	// warm-up: 4 calls per round (two sizes, two contenders).
	if len(order) != 4*(r.rounds+r.warmup) {
		t.Fatalf("%d calls, want %d", len(order), 4*(r.rounds+r.warmup))
	}
	for k := 0; k < r.rounds; k++ {
		first := order[4*(r.warmup+k)]
		if want := r.contenders[k%2].name; first != want {
			t.Errorf("measured round %d starts with %s, want %s", k+1, first, want)
		}
	}
}
