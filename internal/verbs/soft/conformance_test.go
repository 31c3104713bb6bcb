package soft

import (
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

func TestConformance(t *testing.T) { verbstest.Run(t, softEnv) }

func BenchmarkInProcessSendLatency8B(b *testing.B) { verbstest.BenchSendLatency(b, softEnv) }
