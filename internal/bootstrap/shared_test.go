package bootstrap

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// runRejoin is a rank that joins through Shared, lets go of its last hold,
// joins again and exchanges a key with every rank over the second join (as a
// library does whose users call PtlInit and PtlFini more than once), then ends
// its membership.
func runRejoin() int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	KeepShared()
	for round := range 2 {
		b, release, err := Shared(ctx)
		if err != nil {
			fmt.Fprintf(os.Stderr, "round %d: Shared: %v\n", round, err)
			return 10
		}
		r, n := b.Rank(), b.Size()
		key := fmt.Sprintf("round%d", round)
		if err := b.Put(key, []byte(fmt.Sprint(r))); err != nil {
			fmt.Fprintf(os.Stderr, "round %d: Put: %v\n", round, err)
			return 11
		}
		if err := b.Fence(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "round %d: Fence: %v\n", round, err)
			return 11
		}
		for q := range n {
			if v, err := b.Get(ctx, q, key); err != nil || string(v) != fmt.Sprint(q) {
				fmt.Fprintf(os.Stderr, "round %d: Get from %d: %q, %v\n", round, q, v, err)
				return 12
			}
		}
		if err := b.Barrier(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "round %d: Barrier: %v\n", round, err)
			return 11
		}
		if err := release(); err != nil {
			fmt.Fprintf(os.Stderr, "round %d: release: %v\n", round, err)
			return 13
		}
		fmt.Printf("rank %d round %d ok\n", r, round)
	}
	if err := CloseShared(); err != nil {
		fmt.Fprintln(os.Stderr, "CloseShared:", err)
		return 14
	}
	return 0
}

// TestSharedRejoin: with KeepShared, a process whose holders all let go of the
// job joins it again (a launcher admits one join per rank, so the first join is
// kept), and CloseShared ends it cleanly.
func TestSharedRejoin(t *testing.T) {
	requireLaunch(t)
	cfg, out, errOut := helperConfig(2, "rejoin")
	res, err := Launch(t.Context(), cfg)
	if err := jobTrouble(res, err, out.String(), errOut.String()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"rank 0 round 1 ok", "rank 1 round 1 ok"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// TestCloseSharedWithHolders: CloseShared leaves a join that still has holders
// alone, and closes a kept one that has none.
func TestCloseSharedWithHolders(t *testing.T) {
	KeepShared()
	defer resetShared()
	b, release, err := Shared(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := CloseShared(); err == nil {
		t.Fatal("CloseShared closed a join that has a holder")
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	b2, release2, err := Shared(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if b2 != b {
		t.Fatal("a kept join was not reused")
	}
	if err := release2(); err != nil {
		t.Fatal(err)
	}
	if err := CloseShared(); err != nil {
		t.Fatal(err)
	}
	if err := CloseShared(); err != nil {
		t.Fatalf("CloseShared without a join: %v", err)
	}
}

// resetShared undoes KeepShared and drops the join, for in-process tests.
func resetShared() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	shared.keep = false
	if shared.refs == 0 && shared.b != nil {
		shared.b.Close()
		shared.b = nil
	}
}
