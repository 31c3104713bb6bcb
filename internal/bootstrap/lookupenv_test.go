package bootstrap

import "testing"

// TestLookupEnv checks that Open's environment reader sees the launcher's PTL_
// variables (through envknob) and other launchers' variables alike.
func TestLookupEnv(t *testing.T) {
	t.Setenv(EnvRank, "1")
	t.Setenv("PMI_SIZE", "3")
	if v, ok := lookupEnv(EnvRank); !ok || v != "1" {
		t.Fatalf("%s: %q, %v", EnvRank, v, ok)
	}
	if v, ok := lookupEnv("PMI_SIZE"); !ok || v != "3" {
		t.Fatalf("PMI_SIZE: %q, %v", v, ok)
	}
	t.Setenv("PTL_NOT_A_KNOB", "x")
	if _, ok := lookupEnv("PTL_NOT_A_KNOB"); ok {
		t.Fatal("an unregistered PTL_ variable was read")
	}
	for _, n := range []string{EnvRank, EnvSize, EnvAddr, EnvJobKey} {
		t.Setenv(n, "v")
		if v, ok := lookupEnv(n); !ok || v != "v" {
			t.Errorf("%s is not read (is it registered in envknob?)", n)
		}
	}
}
