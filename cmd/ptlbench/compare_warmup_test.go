package main

import (
	"context"
	"errors"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
)

// TestWarmupRoundIsDropped: -compare runs every contender once at every size
// before the measured rounds and records none of it. The first measurement of
// a run pays for the host waking up, and it was always goportals' (contender
// 0). Here each contender's first call at a size returns a cold value; none of
// it may reach the samples (the peer's first measured call at 8 bytes fails, so
// a leaked warm-up value would not be overwritten there), and the measured
// rounds still rotate their order.
func TestWarmupRoundIsDropped(t *testing.T) {
	calls := map[string]int{}
	var order []string
	mk := func(key, name string) *contender {
		return &contender{key: key, name: name, run: func(_ context.Context, size int, _ counts) (map[metric]float64, error) {
			calls[name]++
			order = append(order, name)
			if name == "peer ping" && size == 8 && calls[name] == 3 {
				return nil, errors.New("measured failure") // round 1, 8 bytes
			}
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
				failedHere := name == "peer ping" && size == 8 && i == 0
				switch {
				case failedHere && !math.IsNaN(v):
					t.Errorf("%s at %d bytes, round %d (failed): %v, want no value (NaN)", name, size, i+1, v)
				case !failedHere && v != 1:
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

// TestWarmupNotes: what a warm-up round finds is reported. A peer missing
// there is noted and dropped; a peer that fails there is noted as a warm-up
// failure, and its failure in a measured round is noted as well (the warm-up's
// note does not stand for it); goportals failing in a warm-up round fails the
// run, naming the warm-up round.
func TestWarmupNotes(t *testing.T) {
	flakyCalls, missingCalls := 0, 0
	ok := &contender{key: "goportals", name: ours, run: func(context.Context, int, counts) (map[metric]float64, error) {
		return map[metric]float64{latency: 1}, nil
	}}
	flaky := &contender{key: "flaky", name: "flaky", run: func(context.Context, int, counts) (map[metric]float64, error) {
		flakyCalls++
		if flakyCalls == 1 || flakyCalls == 3 { // the warm-up, and measured round 2
			return nil, errors.New("cold")
		}
		return map[metric]float64{latency: 1}, nil
	}}
	gone := &contender{key: "gone", name: "gone", run: func(context.Context, int, counts) (map[metric]float64, error) {
		missingCalls++
		return nil, errPeerMissing
	}}
	r := &compareRun{contenders: []*contender{ok, flaky, gone}, sizes: []int{8}, loads: []load{quiet},
		rounds: 3, warmup: 1, s: newSamples(3), log: io.Discard}
	if err := r.measure(context.Background()); err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(r.notes, "\n")
	if missingCalls != 1 || !strings.Contains(notes, "skipped gone") {
		t.Errorf("missing peer: %d calls, notes %q; want one call and a note", missingCalls, notes)
	}
	if !strings.Contains(notes, "flaky failed in a warm-up round") {
		t.Errorf("notes %q lack the warm-up failure", notes)
	}
	if !strings.Contains(notes, "flaky failed (round 2/3") {
		t.Errorf("notes %q lack the failure of measured round 2", notes)
	}

	bad := &contender{key: "goportals", name: ours, run: func(_ context.Context, _ int, _ counts) (map[metric]float64, error) {
		return nil, errors.New("no ranks")
	}}
	r = &compareRun{contenders: []*contender{bad}, sizes: []int{8}, loads: []load{quiet},
		rounds: 1, warmup: 1, s: newSamples(1), log: io.Discard}
	if err := r.measure(context.Background()); err != nil {
		t.Fatal(err)
	}
	if r.oursErr == nil || !strings.Contains(r.oursErr.Error(), "warm-up round 1/1") {
		t.Errorf("goportals failing in the warm-up: %v, want an error naming the warm-up round", r.oursErr)
	}
}

// TestWarmupKeepsLoadsAlternating: with -busy, the loads alternate their order
// through the warm-up rounds into the measured ones, which begin as they did
// without a warm-up.
func TestWarmupKeepsLoadsAlternating(t *testing.T) {
	both := []load{quiet, busy}
	var seq []load
	for round := -3; round < 3; round++ {
		seq = append(seq, roundLoads(both, round)...)
	}
	for i := 1; i < len(seq); i += 2 {
		if i+1 < len(seq) && seq[i] != seq[i+1] {
			t.Fatalf("loads %v: a round does not begin with the load the last one ended with", seq)
		}
	}
	if !slices.Equal(roundLoads(both, 0), both) {
		t.Fatalf("round 1: %v, want quiet first as without a warm-up", roundLoads(both, 0))
	}
	if !slices.Equal(roundLoads(both, -1), []load{busy, quiet}) {
		t.Fatalf("the warm-up round before round 1: %v, want busy first", roundLoads(both, -1))
	}
}
