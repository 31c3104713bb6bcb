//go:build !cgo

package main

// main is empty, as in the cgo build (a c-shared library's main never runs):
// without cgo this package exports nothing to C, and the C ABI needs cgo, but
// `go build ./...` and `go vet ./...` still build it (its pure-Go PMI parts
// are tested either way).
func main() {}
