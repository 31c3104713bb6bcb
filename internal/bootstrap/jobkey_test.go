package bootstrap

import (
	"bytes"
	"context"
	"encoding/hex"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"
)

// TestJobKeyPtlrun: a rank of a ptlrun job knows the launcher's key from Open on.
func TestJobKeyPtlrun(t *testing.T) {
	s := startServer(t, 1, "tcp")
	cfg := s.ClientConfig(0)
	b, err := openFrom(t.Context(), envMap(map[string]string{EnvAddr: cfg.Addr, EnvRank: "0", EnvSize: "1", EnvJobKey: cfg.JobKey}))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	key, known := JobKey()
	if !known || string(key) != s.JobKey() {
		t.Fatalf("JobKey() = %q, %v; want the launcher's %q", key, known, s.JobKey())
	}
}

// TestJobKeyLone: a lone process has no job key, and says it knows that.
func TestJobKeyLone(t *testing.T) {
	b, err := openFrom(t.Context(), envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if key, known := JobKey(); !known || key != nil {
		t.Fatalf("lone JobKey() = %q, %v; want nil, true", key, known)
	}
}

// pmiPortJob opens n ranks of one job over PMI_PORT against a fake launcher.
func pmiPortJob(t *testing.T, n int) []Bootstrap {
	t.Helper()
	f := newFakePMI(n, 1)
	f.port = true
	bs := make([]Bootstrap, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		f.wg.Go(func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			f.serve(r, c)
		})
		wg.Go(func() {
			bs[r], errs[r] = openFrom(t.Context(), envMap(map[string]string{"PMI_PORT": ln.Addr().String(), "PMI_ID": strconv.Itoa(r)}))
		})
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, b := range bs {
			if b != nil {
				b.Close()
			}
		}
		f.shutdown()
		if v := f.Violations(); len(v) > 0 {
			t.Errorf("launcher saw violations: %v", v)
		}
	})
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	return bs
}

// TestJobKeyPMI: under a PMI launcher, which hands out no secret, rank 0 draws a
// key; it is unknown before the job's first fence, then every rank holds the same
// one, and another job draws another.
func TestJobKeyPMI(t *testing.T) {
	var keys [2][]byte
	for job := range keys {
		bs := pmiPortJob(t, 3)
		for r, b := range bs {
			if _, known := keyOf(b).get(); known {
				t.Fatalf("job %d rank %d: key known before the first fence", job, r)
			}
		}
		ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
		defer cancel()
		var wg sync.WaitGroup
		errs := make([]error, len(bs))
		for r, b := range bs {
			wg.Go(func() { errs[r] = b.Fence(ctx) })
		}
		wg.Wait()
		for r, b := range bs {
			if errs[r] != nil {
				t.Fatalf("job %d rank %d fence: %v", job, r, errs[r])
			}
			k, known := keyOf(b).get()
			if !known {
				t.Fatalf("job %d rank %d: key unknown after the fence", job, r)
			}
			if _, err := hex.DecodeString(string(k)); err != nil || len(k) != 64 {
				t.Fatalf("job %d rank %d: key %q is not 64 hex digits", job, r, k)
			}
			if r == 0 {
				keys[job] = k
			} else if !bytes.Equal(k, keys[job]) {
				t.Fatalf("job %d: rank %d holds %q, rank 0 %q", job, r, k, keys[job])
			}
		}
		// The process's key is that of the job it opened last.
		if k, known := JobKey(); !known || !bytes.Equal(k, keys[job]) {
			t.Fatalf("JobKey() = %q, %v; want job %d's %q", k, known, job, keys[job])
		}
	}
	if bytes.Equal(keys[0], keys[1]) {
		t.Fatalf("two jobs drew the same key %q", keys[0])
	}
}
