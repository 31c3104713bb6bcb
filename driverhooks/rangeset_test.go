package driverhooks

import (
	"math/rand"
	"testing"
)

// The range set against a page bitmap model.
func TestRangeSetModel(t *testing.T) {
	const pages = 64
	rng := rand.New(rand.NewSource(1))
	r := newRangeSet()
	var model [pages]bool
	for i := 0; i < 5000; i++ {
		a := rng.Intn(pages)
		b := a + 1 + rng.Intn(pages-a)
		add := rng.Intn(2) == 0
		if add {
			r.add(uintptr(a), uintptr(b))
		} else {
			r.remove(uintptr(a), uintptr(b))
		}
		for p := a; p < b; p++ {
			model[p] = add
		}
		var got [pages]bool
		prevEnd := uintptr(0)
		for j, s := range r.spans() {
			if s.start >= s.end || (j > 0 && s.start <= prevEnd) {
				t.Fatalf("step %d: spans not disjoint and separated: %v", i, r.spans())
			}
			prevEnd = s.end
			for p := s.start; p < s.end; p++ {
				got[p] = true
			}
		}
		if got != model {
			t.Fatalf("step %d (%v [%d,%d)): set %v differs from the model", i, add, a, b, r.spans())
		}
	}
}
