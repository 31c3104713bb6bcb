package loopback_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/loopback"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// openTwo opens two contexts of loop0.
func openTwo(tb testing.TB) (verbs.Context, verbs.Context) {
	tb.Helper()
	p, err := verbs.Lookup(loopback.ProviderName)
	if err != nil {
		tb.Fatal(err)
	}
	devs, err := p.Devices()
	if err != nil || len(devs) != 1 || devs[0].Name() != loopback.DeviceName {
		tb.Fatalf("devices %v, %v: want one %s", devs, err, loopback.DeviceName)
	}
	a, err := devs[0].Open()
	if err != nil {
		tb.Fatal(err)
	}
	b, err := devs[0].Open()
	if err != nil {
		tb.Fatal(err)
	}
	return a, b
}

var env = verbstest.Env{Name: "loopback", Open: openTwo}

func TestConformance(t *testing.T) { verbstest.Run(t, env) }

func BenchmarkSendLatency8B(b *testing.B) { verbstest.BenchSendLatency(b, env) }

func BenchmarkWriteBandwidth1MiB(b *testing.B) { verbstest.BenchWriteBandwidth(b, env, 1<<20) }
