package soft

import (
	"fmt"
	"testing"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

// softEnv runs the provider conformance suite with two contexts in one process
// (the real shared-memory and cross-memory paths, to this process itself).
var softEnv = verbstest.Env{
	Name: "soft",
	Open: func(tb testing.TB) (verbs.Context, verbs.Context) {
		a, err := Open()
		if err != nil {
			tb.Fatal(err)
		}
		b, err := Open()
		if err != nil {
			a.Close()
			tb.Fatal(err)
		}
		return a, b
	},
}

// softMlockEnv is softEnv with the mlock fallback forced (PTL_SOFT_PIN=mlock), so
// both pin methods pass the suite wherever io_uring is available.
var softMlockEnv = verbstest.Env{
	Name: "soft/mlock",
	Open: func(tb testing.TB) (verbs.Context, verbs.Context) {
		var cs [2]*Context
		for i := range cs {
			c, err := openPinned(PinMlock)
			if err == nil && c.PinMethod() != PinMlock {
				err = fmt.Errorf("PinMethod %q, want %q", c.PinMethod(), PinMlock)
			}
			if err != nil {
				if i == 1 {
					cs[0].Close()
				}
				tb.Fatal(err)
			}
			cs[i] = c
		}
		return cs[0], cs[1]
	},
}

func TestConformance(t *testing.T) {
	t.Run("default", func(t *testing.T) {
		c, err := Open()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("pin method %s %s", c.PinMethod(), c.pinWhy)
		c.Close()
		verbstest.Run(t, softEnv)
	})
	t.Run("mlock", func(t *testing.T) { verbstest.Run(t, softMlockEnv) })
	// The TCP path between nodes, forced between two contexts of this process: the
	// same suite, every request over a TCP stream.
	t.Run("tcp", func(t *testing.T) {
		t.Setenv(EnvPath, "tcp")
		verbstest.Run(t, softEnv)
	})
}

func BenchmarkInProcessSendLatency8B(b *testing.B) { verbstest.BenchSendLatency(b, softEnv) }
