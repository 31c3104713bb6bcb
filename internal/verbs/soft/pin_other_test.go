//go:build !linux

package soft

// memlockChildEnv and seccompChildEnv name children of Linux-only tests; elsewhere
// they never run.
const (
	memlockChildEnv = "SOFT_MEMLOCK_CHILD"
	seccompChildEnv = "SOFT_SECCOMP_CHILD"
)

func runMemlockChild(string) int { return 2 }
func runSeccompChild(string) int { return 2 }
