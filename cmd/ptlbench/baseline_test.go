package main

import (
	"context"
	"errors"
	"os/exec"
	"runtime"
	"testing"
)

func TestMemcpyBandwidth(t *testing.T) {
	for _, size := range []int{1, 8, 4097, 1 << 20} {
		v, err := memcpyBandwidth(size, 1, 4)
		if err != nil {
			t.Fatalf("%d bytes: %v", size, err)
		}
		if !(v > 0) {
			t.Fatalf("%d bytes: %v MB/s", size, v)
		}
	}
	for _, bad := range [][3]int{{0, 1, 1}, {8, 1, 0}, {8, -1, 1}} {
		if _, err := memcpyBandwidth(bad[0], bad[1], bad[2]); !errors.Is(err, errUsage) {
			t.Errorf("memcpyBandwidth%v: %v, want errUsage", bad, err)
		}
	}
}

// cmaOrSkip runs the process_vm_writev baseline, skipping where the system
// cannot.
func cmaOrSkip(t *testing.T, size, warmup, msgs int) float64 {
	t.Helper()
	v, err := cmaBandwidth(context.Background(), size, warmup, msgs)
	if errors.Is(err, errNotSupported) {
		t.Skipf("process_vm_writev unavailable here: %v", err)
	}
	if err != nil {
		t.Fatalf("%d bytes: %v", size, err)
	}
	return v
}

// TestCMABandwidth writes into a helper process with process_vm_writev; the
// helper's checksum of its memory must match what was written (sizes that
// cross pages unevenly too).
func TestCMABandwidth(t *testing.T) {
	for _, size := range []int{8, 4097, 1<<20 + 3} {
		if v := cmaOrSkip(t, size, 1, 3); !(v > 0) {
			t.Fatalf("%d bytes: %v MB/s", size, v)
		}
	}
	if _, err := cmaBandwidth(context.Background(), 0, 1, 1); !errors.Is(err, errUsage) && !errors.Is(err, errNotSupported) {
		t.Fatalf("size 0: %v, want errUsage", err)
	}
}

// TestCMATargetChecks: the target's checksum tells data it holds from data it
// does not, so the baseline cannot report a copy that did not land.
func TestCMATargetChecks(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("process_vm_writev is Linux only")
	}
	h, greeting, err := startHelper(context.Background(), helperCMATarget, cmaSizeEnv+"=4096")
	if err != nil {
		t.Fatal(err)
	}
	defer h.stop()
	if len(greeting) < 6 || greeting[:5] != "addr " {
		t.Fatalf("greeting %q", greeting)
	}
	zero, err := h.ask("sum")
	if err != nil {
		t.Fatal(err)
	}
	again, err := h.ask("sum")
	if err != nil || again != zero {
		t.Fatalf("checksum of untouched memory changed: %q then %q (%v)", zero, again, err)
	}
	if zero == "0" || zero == "" {
		t.Fatalf("checksum %q of 4096 zero bytes", zero)
	}
	if ans, err := h.ask("bogus"); err == nil {
		t.Fatalf("unknown command answered %q", ans)
	}
	var exit *exec.ExitError
	if err := h.stop(); !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("the target ended with %v after an unknown command, want exit status 1", err)
	}
	if err := h.stop(); !errors.As(err, &exit) {
		t.Fatalf("second stop: %v, want the same exit", err)
	}
}
