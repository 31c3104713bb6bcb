package regcache

import (
	"errors"
	"strings"
	"testing"

	"github.com/goportals/goportals/driverhooks"
)

// TestCheckEnvNotifier: a PTL_NOTIFIER value no backend answers to fails CheckEnv
// (and so Init and NIInit) with an error naming the variable and the values it
// takes, instead of leaving the notifier silently unopened.
func TestCheckEnvNotifier(t *testing.T) {
	t.Setenv(driverhooks.CheckPFNEnv, "")
	t.Setenv(driverhooks.EnvNotifier, "ufd")
	err := CheckEnv()
	if !errors.Is(err, ErrBadEnv) || !strings.Contains(err.Error(), driverhooks.EnvNotifier) ||
		!strings.Contains(err.Error(), "auto, ebpf, seccomp, uffd or explicit") {
		t.Fatalf("CheckEnv with %s=ufd: %v", driverhooks.EnvNotifier, err)
	}
	for _, v := range []string{"", "auto", "uffd", "explicit", "EBPF"} {
		t.Setenv(driverhooks.EnvNotifier, v)
		if err := CheckEnv(); err != nil {
			t.Errorf("CheckEnv with %s=%q: %v", driverhooks.EnvNotifier, v, err)
		}
	}
}
