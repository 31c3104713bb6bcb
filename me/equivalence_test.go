package me

import (
	"math/rand"
	"testing"
)

// TestEquivalenceRandom runs the FuzzMatchEquivalence harness over pseudo-random inputs
// from a fixed seed, so that plain `go test` exercises the hashed table against the
// linear model beyond the seed corpus.
func TestEquivalenceRandom(t *testing.T) {
	r := rand.New(rand.NewSource(4))
	n := 3000
	if testing.Short() {
		n = 300
	}
	for k := 0; k < n; k++ {
		b := make([]byte, r.Intn(800))
		r.Read(b)
		if err := equivalence(b); err != nil {
			t.Fatalf("%v\ninput %q", err, b)
		}
	}
}
