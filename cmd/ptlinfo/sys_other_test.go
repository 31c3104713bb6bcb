//go:build !linux

package main

import "testing"

// checkSys checks that the Linux-only parts say they are not supported here.
func checkSys(t *testing.T, r Report) {
	if r.Memlock.Error == "" || r.Ptrace.Error == "" {
		t.Errorf("memlock %+v, ptrace %+v: want not-supported errors off Linux", r.Memlock, r.Ptrace)
	}
}
