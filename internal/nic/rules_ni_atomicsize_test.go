package nic

import "testing"

// The atomic size limits an NI grants by default hold whole elements of every
// datatype (the largest, a double complex or long double complex, is 32 bytes):
// clients such as Sandia OpenSHMEM cut long reductions into pieces of
// max_atomic_size bytes, and a piece that ends inside an element corrupts it.
func TestRulesNIAtomicSizeWholeElements(t *testing.T) {
	nis := newNIsWith(t, 1, NIMatching|NIPhysical, nil)
	l := nis[0].Limits()
	for name, v := range map[string]uint64{"max_atomic_size": l.MaxAtomicSize, "max_fetch_atomic_size": l.MaxFetchAtomicSize} {
		if v == 0 || v%32 != 0 {
			t.Errorf("%s = %d, want a non-zero multiple of 32", name, v)
		}
	}
}
