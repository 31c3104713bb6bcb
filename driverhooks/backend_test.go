package driverhooks

import (
	"errors"
	"testing"
)

func TestParseKind(t *testing.T) {
	for in, want := range map[string]Kind{"": "", "auto": "", "AUTO": "", "ebpf": KindEBPF, "seccomp": KindSeccomp,
		"uffd": KindUffd, " explicit ": KindExplicit} {
		if got, err := ParseKind(in); err != nil || got != want {
			t.Errorf("ParseKind(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"bpf", "none", "1"} {
		if _, err := ParseKind(in); err == nil {
			t.Errorf("ParseKind(%q) accepted", in)
		}
	}
}

func TestExplicitBackendWatchesNothing(t *testing.T) {
	b, err := OpenBackend(KindExplicit)
	if err != nil || b != nil {
		t.Fatalf("OpenBackend(explicit) = %v, %v", b, err)
	}
	n := NewNotifier(b)
	if n.Kind() != KindExplicit || n.Guarantee() == "" {
		t.Fatalf("kind %q guarantee %q", n.Kind(), n.Guarantee())
	}
	if err := n.Watch(0x10000, 4096); !errors.Is(err, ErrNotSupported) {
		t.Fatalf("Watch on the explicit notifier: %v, want ErrNotSupported", err)
	}
	s := n.Subscribe()
	defer s.Close()
	n.Invalidate(0x10000, 4096)
	if !s.Pending() {
		t.Fatal("an explicit invalidation is not pending")
	}
	var got []uintptr
	s.Drain(func(start, end uintptr) { got = append(got, start, end) })
	if len(got) != 2 || got[0] != 0x10000 || got[1] != 0x11000 {
		t.Fatalf("drained %#x", got)
	}
}

func TestNilMonitorIsNoBackend(t *testing.T) {
	var m *Monitor
	if n := NewNotifier(m); n.Backend() != nil || n.Kind() != KindExplicit {
		t.Fatalf("a nil *Monitor became backend %v", n.Backend())
	}
}

// Auto selection never installs the seccomp filter: it is one-way and inherited by
// children, so only a program that asks for it by name gets it.
func TestAutoLeavesOutSeccomp(t *testing.T) {
	for _, k := range autoOrder {
		if k == KindSeccomp {
			t.Fatal("auto selection tries the seccomp backend")
		}
	}
	if len(autoOrder) == 0 || autoOrder[0] != KindEBPF {
		t.Fatalf("auto order %v: the eBPF backend, which has no window, must come first", autoOrder)
	}
}
