package bootstrap

import (
	"errors"
	"os"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode == "rejoin" {
		os.Exit(runRejoin())
	} else if mode != "" {
		os.Exit(runHelper(mode))
	}
	goleak.VerifyTestMain(m)
}

// envMap makes a lookup function from a map.
func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestOpenLone(t *testing.T) {
	b, err := openFrom(t.Context(), envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Rank() != 0 || b.Size() != 1 {
		t.Fatalf("lone rank/size %d/%d", b.Rank(), b.Size())
	}
	if _, ok := b.(*Lone); !ok {
		t.Fatalf("backend %T, want *Lone", b)
	}
	ctx := t.Context()
	if err := b.Put("k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Get(ctx, 0, "k"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Get before Fence: %v", err)
	}
	if err := b.Fence(ctx); err != nil {
		t.Fatal(err)
	}
	v, err := b.Get(ctx, 0, "k")
	if err != nil || string(v) != "v" {
		t.Fatalf("Get: %q %v", v, err)
	}
	v[0] = 'x' // the caller owns the copy
	if v, err := b.Get(ctx, 0, "k"); err != nil || string(v) != "v" {
		t.Fatalf("stored value changed through a returned slice: %q %v", v, err)
	}
	if _, err := b.Get(ctx, 1, "k"); !errors.Is(err, ErrBadRank) {
		t.Fatalf("Get rank 1: %v", err)
	}
	if err := b.Barrier(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if err := b.Fence(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Fence after Close: %v", err)
	}
	a := NewLone()
	if err := a.Abort(3, "x"); err != nil {
		t.Fatal(err)
	}
	if err := a.Barrier(ctx); !errors.Is(err, ErrAborted) {
		t.Fatalf("Barrier after Abort: %v", err)
	}
}

func TestOpenEnv(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"missing rank": {EnvAddr: "tcp:127.0.0.1:1", EnvSize: "2", EnvJobKey: "k"},
		"rank too big": {EnvAddr: "tcp:127.0.0.1:1", EnvSize: "2", EnvRank: "2", EnvJobKey: "k"},
		"bad size":     {EnvAddr: "tcp:127.0.0.1:1", EnvSize: "zero", EnvRank: "0", EnvJobKey: "k"},
		"no key":       {EnvAddr: "tcp:127.0.0.1:1", EnvSize: "1", EnvRank: "0"},
		"bad network":  {EnvAddr: "udp:127.0.0.1:1", EnvSize: "1", EnvRank: "0", EnvJobKey: "k"},
	} {
		if _, err := openFrom(t.Context(), envMap(env)); !errors.Is(err, ErrBadEnv) {
			t.Errorf("%s: %v, want ErrBadEnv", name, err)
		}
	}
	for name, env := range map[string]map[string]string{
		"hydra":   {"PMI_FD": "five", "PMI_SIZE": "4", "PMI_RANK": "1"},
		"pmi2":    {"PMI_PORT": "host:1234", "PMI_SIZE": "4"},
		"openmpi": {"OMPI_COMM_WORLD_SIZE": "2"},
		"slurm":   {"SLURM_PROCID": "0", "SLURM_STEP_NUM_TASKS": "8"},
	} {
		// Each launcher's backend is chosen and finds its environment incomplete.
		if _, err := openFrom(t.Context(), envMap(env)); !errors.Is(err, ErrBadEnv) {
			t.Errorf("%s: %v, want ErrBadEnv", name, err)
		}
	}
	// One-rank foreign launches are lone processes.
	b, err := openFrom(t.Context(), envMap(map[string]string{"PMI_FD": "5", "PMI_SIZE": "1", "SLURM_PROCID": "0", "SLURM_NTASKS": "1"}))
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
}

func TestOpenPtlrun(t *testing.T) {
	s := startServer(t, 1, "unix")
	env := map[string]string{}
	for _, kv := range s.ClientConfig(0).Env() {
		k, v, ok := cut(kv)
		if !ok {
			t.Fatalf("environment entry %q has no '='", kv)
		}
		env[k] = v
	}
	b, err := openFrom(t.Context(), envMap(env))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, ok := b.(*Client); !ok {
		t.Fatalf("backend %T, want *Client", b)
	}
	if err := b.Fence(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func cut(kv string) (string, string, bool) {
	for i := range len(kv) {
		if kv[i] == '=' {
			return kv[:i], kv[i+1:], true
		}
	}
	return kv, "", false
}
