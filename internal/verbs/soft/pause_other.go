//go:build !amd64

package soft

// cpuPause is the portable fallback of the spin-wait hint: nothing.
func cpuPause() {}
