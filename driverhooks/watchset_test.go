package driverhooks

import (
	"math/rand"
	"testing"
)

// The watch set against a per-page counter model.
func TestWatchSetModel(t *testing.T) {
	const pages = 64
	rng := rand.New(rand.NewSource(1))
	w := newWatchSet()
	var model [pages]int
	for i := 0; i < 20000; i++ {
		a := rng.Intn(pages)
		b := a + 1 + rng.Intn(min(pages-a, 16))
		if rng.Intn(2) == 0 {
			w.add(uintptr(a), uintptr(b))
			for p := a; p < b; p++ {
				model[p]++
			}
			continue
		}
		// Only remove what is watched, as callers do.
		ok := true
		for p := a; p < b; p++ {
			ok = ok && model[p] > 0
		}
		if !ok {
			continue
		}
		freed := w.remove(uintptr(a), uintptr(b))
		var want []span
		for p := a; p < b; p++ {
			model[p]--
			if model[p] == 0 {
				if k := len(want); k > 0 && want[k-1].end == uintptr(p) {
					want[k-1].end++
				} else {
					want = append(want, span{uintptr(p), uintptr(p + 1)})
				}
			}
		}
		if len(freed) != len(want) {
			t.Fatalf("step %d: freed %v, want %v", i, freed, want)
		}
		for j := range want {
			if freed[j] != want[j] {
				t.Fatalf("step %d: freed %v, want %v", i, freed, want)
			}
		}
		var got [pages]bool
		for _, s := range w.spans() {
			for p := s.start; p < s.end; p++ {
				got[p] = true
			}
		}
		for p := range model {
			if got[p] != (model[p] > 0) {
				t.Fatalf("step %d: page %d watched=%v, model count %d", i, p, got[p], model[p])
			}
		}
	}
}
