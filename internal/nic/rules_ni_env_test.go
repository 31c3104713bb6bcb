package nic

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/goportals/goportals/driverhooks"
	"github.com/goportals/goportals/regcache"
)

// The environment knobs (PTL_RCACHE_*, PTL_CHECK_PFN) are validated when the
// library starts (Init) and when an NI is made (NIInit): a bad value, or an unknown
// PTL_RCACHE_ variable, is an error that names the variable and the accepted
// values, never silently ignored.

var rulesBadEnv = []struct{ name, value, accepted string }{
	{"PTL_RCACHE_MAX_ENTRIES", "abc", "positive integer"},
	{"PTL_RCACHE_MAX_ENTRIES", "-3", "positive integer"},
	{"PTL_RCACHE_MAX_BYTES", "lots", "positive size"},
	{"PTL_RCACHE_MAX_BYTES", "0", "positive size"},
	{"PTL_RCACHE_DISABLE", "maybe", "0/1"},
	{"PTL_CHECK_PFN", "2", "1, true, yes or on"},
	{"PTL_CHECK_PFN", "TRUE", "1, true, yes or on"},
	{"PTL_RCACHE_MAXBYTES", "1G", "PTL_RCACHE_MAX_BYTES"},
}

// rulesClearEnv unsets every knob for the test, so the one under test is alone.
func rulesClearEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "PTL_RCACHE_") || k == "PTL_CHECK_PFN" {
			t.Setenv(k, "") // restored when the test ends
			os.Unsetenv(k)
		}
	}
}

func wantEnvError(t *testing.T, what string, err error, name, accepted string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error", what)
		return
	}
	if !errors.Is(err, regcache.ErrBadEnv) || !strings.Contains(err.Error(), name) ||
		!strings.Contains(err.Error(), accepted) {
		t.Errorf("%s: %v; want an error naming %s and the accepted values (%q)", what, err, name, accepted)
	}
}

func TestRulesNIEnvValidatedAtNIInit(t *testing.T) {
	for _, c := range rulesBadEnv {
		t.Run(c.name+"="+c.value, func(t *testing.T) {
			rulesClearEnv(t)
			t.Setenv(c.name, c.value)
			_, err := rulesSolo(t).NIInit(IfaceDefault, NIMatching|NIPhysical, PIDAny, nil)
			wantEnvError(t, "NIInit", err, c.name, c.accepted)
			if ErrnoOf(err) != Fail {
				t.Errorf("NIInit: %v, want PTL_FAIL", ErrnoOf(err))
			}
		})
	}
	t.Run("good values", func(t *testing.T) {
		rulesClearEnv(t)
		for k, v := range map[string]string{"PTL_RCACHE_MAX_ENTRIES": "16", "PTL_RCACHE_MAX_BYTES": "64M",
			"PTL_RCACHE_DISABLE": "0", "PTL_CHECK_PFN": "0"} {
			t.Setenv(k, v)
		}
		rulesJob(t, 2, NIMatching|NIPhysical, PIDAny, nil)
	})
}

func TestRulesNIEnvValidatedAtInit(t *testing.T) {
	for _, c := range rulesBadEnv[:3] {
		rulesClearEnv(t)
		t.Setenv(c.name, c.value)
		err := Init()
		if err == nil {
			Fini()
		}
		wantEnvError(t, "Init with "+c.name+"="+c.value, err, c.name, c.accepted)
	}
}

// The values the check accepts for PTL_CHECK_PFN are exactly those driverhooks
// reads as on or off, so an accepted value is never misread.
func TestRulesNIEnvCheckPFNValues(t *testing.T) {
	for _, c := range []struct {
		v  string
		on bool
	}{{"1", true}, {"true", true}, {"yes", true}, {"on", true}, {"0", false}, {"false", false}, {"no", false}, {"off", false}} {
		rulesClearEnv(t)
		t.Setenv(driverhooks.CheckPFNEnv, c.v)
		if got := driverhooks.CheckPFNEnabled(); got != c.on {
			t.Errorf("%s=%s: CheckPFNEnabled %v, want %v", driverhooks.CheckPFNEnv, c.v, got, c.on)
		}
		// On, the check also opens the page-frame oracle, which may be refused
		// (it needs privileges): that is not a bad value.
		if err := regcache.CheckEnv(); errors.Is(err, regcache.ErrBadEnv) {
			t.Errorf("%s=%s refused: %v", driverhooks.CheckPFNEnv, c.v, err)
		}
	}
}
