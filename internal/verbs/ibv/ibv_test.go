package ibv

import (
	"errors"
	"testing"

	"github.com/goportals/goportals/internal/rdmadev"
	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

// needDevice skips unless this build links libibverbs and a device has an active
// port, saying which of the two is missing.
func needDevice(tb testing.TB) {
	tb.Helper()
	if mockBuild {
		return // the software model of libibverbs stands in for the device
	}
	if err := (Provider{}).Probe(); err != nil {
		tb.Skipf("no usable RDMA device, the ibv provider cannot run here: %v", err)
	}
}

var ibvEnv = verbstest.Env{
	Name: "ibv",
	Open: func(tb testing.TB) (verbs.Context, verbs.Context) {
		a, err := Open("")
		if err != nil {
			tb.Fatal(err)
		}
		b, err := Open("")
		if err != nil {
			a.Close()
			tb.Fatal(err)
		}
		return a, b
	},
}

// TestConformance runs the provider suite over two contexts on the first active
// port (queue pairs connected through the HCA).
func TestConformance(t *testing.T) {
	needDevice(t)
	verbstest.Run(t, ibvEnv)
}

func BenchmarkSendLatency8B(b *testing.B) {
	needDevice(b)
	verbstest.BenchSendLatency(b, ibvEnv)
}

func TestRegistered(t *testing.T) {
	p, err := verbs.Lookup(ProviderName)
	if err != nil || p.Name() != ProviderName {
		t.Fatalf("Lookup(%q) = %v, %v", ProviderName, p, err)
	}
}

// TestNoRDMAKernel checks the machine without RDMA in the kernel (this one, and most
// CI machines): libibverbs' NULL + ENOSYS device list is zero devices and no error,
// Probe says why the provider is unusable, Open is ErrNoDevice and auto selection
// passes ibv over.
func TestNoRDMAKernel(t *testing.T) {
	if mockBuild {
		t.Skip("built with ibvmock: the software model lists a device")
	}
	if _, err := rdmadev.List(); !errors.Is(err, rdmadev.ErrNoRDMA) {
		t.Skipf("the kernel has RDMA support (%v); this test is for machines without it", err)
	}
	devs, err := Provider{}.Devices()
	if err != nil || len(devs) != 0 {
		t.Fatalf("Devices() = %v, %v; want none and no error", devs, err)
	}
	if err := (Provider{}).Probe(); !errors.Is(err, verbs.ErrNotSupported) {
		t.Fatalf("Probe() = %v, want ErrNotSupported", err)
	}
	if Linked() == nil {
		if _, err := Open(""); !errors.Is(err, verbs.ErrNoDevice) {
			t.Fatalf("Open(\"\") = %v, want ErrNoDevice", err)
		}
		if _, err := Open("mlx5_0"); !errors.Is(err, verbs.ErrNoDevice) {
			t.Fatalf("Open(mlx5_0) = %v, want ErrNoDevice", err)
		}
	}
	if p, reason, err := verbs.Explain("auto"); err == nil && p.Name() == ProviderName {
		t.Fatalf("auto chose ibv without RDMA (%s)", reason)
	}
	if _, err := verbs.Select("ibv"); !errors.Is(err, verbs.ErrNotSupported) {
		t.Fatalf("Select(ibv) = %v, want ErrNotSupported", err)
	}
}
