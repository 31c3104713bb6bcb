package main

import (
	"errors"
	"testing"

	"github.com/goportals/goportals/internal/envknob"
	"github.com/goportals/goportals/portals"
)

func TestProgramOwnsPMI(t *testing.T) {
	for _, c := range []struct {
		value    string
		set      bool
		detected bool
		want     bool
	}{
		{"", false, false, false},
		{"", false, true, true},
		{"auto", true, true, true},
		{"auto", true, false, false},
		{"program", true, false, true},
		{"library", true, true, false},
	} {
		lookup := func(n envknob.Name) (string, bool) {
			if n != envknob.CAPIPMI {
				t.Fatalf("read %s", n)
			}
			return c.value, c.set
		}
		got, err := programOwnsPMI(c.detected, lookup)
		if err != nil || got != c.want {
			t.Errorf("%s=%q (set %v), detected %v: %v, %v; want %v", envknob.CAPIPMI, c.value, c.set, c.detected, got, err, c.want)
		}
	}
	_, err := programOwnsPMI(true, func(envknob.Name) (string, bool) { return "mpi", true })
	if !errors.Is(err, portals.Fail) {
		t.Fatalf("a bad value: %v, want an error with Fail", err)
	}
}
