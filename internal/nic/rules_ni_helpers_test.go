package nic

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// rulesJob starts n processes of one in-memory job and runs NIInit with opts, pid
// and desired on each, collectively. Every rank must succeed (the ranks of a failed
// collective NIInit would wait for each other forever); the processes are closed
// when the test ends.
func rulesJob(t testing.TB, n int, opts NIOptions, pid PID, desired *Limits) ([]*NI, []*Process) {
	t.Helper()
	j := newMemJob(n)
	nis := make([]*NI, n)
	procs := make([]*Process, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := 0; r < n; r++ {
		p, err := NewProcess(memRank{j, r}, nil)
		if err != nil {
			t.Fatal(err)
		}
		procs[r] = p
		t.Cleanup(func() { p.Close() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			nis[r], errs[r] = p.NIInit(IfaceDefault, opts, pid, desired)
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: NIInit: %v", r, err)
		}
	}
	return nis, procs
}

// rulesSolo returns a process that is the only rank of its job (closed when the
// test ends), so NIInit may fail on it without leaving a peer waiting.
func rulesSolo(t testing.TB) *Process {
	t.Helper()
	p, err := NewProcess(memRank{newMemJob(1), 0}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// wantErrno fails the test unless err carries code.
func wantErrno(t testing.TB, what string, err error, code Errno) {
	t.Helper()
	if ErrnoOf(err) != code || (code != OK && !errors.Is(err, code)) {
		t.Errorf("%s: got %v (%v), want %v", what, ErrnoOf(err), err, code)
	}
}

// rulesCtx is a context for waits that must end by themselves well before it does.
func rulesCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// mustEQn allocates an event queue of n slots on ni, failing the test on error.
func mustEQn(t testing.TB, ni *NI, n int) *EQ {
	t.Helper()
	q, err := ni.EQAlloc(n)
	if err != nil {
		t.Fatalf("EQAlloc(%d): %v", n, err)
	}
	return q
}

// mustCT allocates a counting event on ni, failing the test on error.
func mustCT(t testing.TB, ni *NI) *CT {
	t.Helper()
	ct, err := ni.CTAlloc()
	if err != nil {
		t.Fatalf("CTAlloc: %v", err)
	}
	return ct
}

// mustMD binds s on ni, failing the test on error.
func mustMD(t testing.TB, ni *NI, s MDSpec) *MD {
	t.Helper()
	m, err := ni.MDBind(s)
	if err != nil {
		t.Fatalf("MDBind: %v", err)
	}
	return m
}

// mustPhysID returns ni's physical id, failing the test on error.
func mustPhysID(t testing.TB, ni *NI) ProcessID {
	t.Helper()
	id, err := ni.PhysID()
	if err != nil {
		t.Fatalf("PhysID: %v", err)
	}
	return id
}
