// Package outsidetest holds the test that proves goportals usable from another
// module: it builds tests/outside, a program with its own go.mod that reaches this
// checkout through a replace directive and imports only public packages, and runs
// it as two ranks under cmd/ptlrun. The package has no code of its own.
package outsidetest
