//go:build !amd64

package spin

// Pause is the portable fallback of the spin-wait hint: nothing.
func Pause() {}
