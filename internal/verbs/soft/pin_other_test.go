//go:build !linux

package soft

// memlockChildEnv names the child of a Linux-only test; elsewhere it never runs.
const memlockChildEnv = "SOFT_MEMLOCK_CHILD"

func runMemlockChild(string) int { return 2 }
