package nic

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/bootstrap"
	"github.com/goportals/goportals/internal/netnstest"
)

// launchAcross runs an n-rank job in role with rank r in network namespace
// r mod 2 of p: two nodes, joined by veth, so queue pairs between ranks of
// different parity take the soft provider's TCP path and those between ranks of
// the same parity (with n > 2) its shared memory. The bootstrap runs on a unix
// socket, which every namespace of the machine reaches.
func launchAcross(t *testing.T, p *netnstest.Pair, role string, n int) string {
	t.Helper()
	var out lockedBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := bootstrap.Launch(ctx, bootstrap.LaunchConfig{N: n, Argv: p.WrapByRank(os.Args[0], "-test.run=^$"),
		Env: childEnv(role), Stdout: &out, Stderr: &out, Prefix: true, Timeout: 60 * time.Second, Network: "unix"})
	if e := checkJob(out.String(), res, err); e != nil {
		t.Fatal(e)
	}
	return out.String()
}

// TestAcrossNodes runs the put/get/atomics job and the dead-peer job on two
// nodes (network namespaces joined by veth), with two ranks (one per node) and
// with four (two per node): every rank puts, gets and fetch-adds to every other,
// so both the TCP path between the nodes and the shared memory inside each carry
// data, verified byte for byte at both ends; and a rank that dies (the last,
// whose node also holds a survivor) makes every survivor's operations to it
// complete with NI_UNDELIVERABLE instead of hanging.
func TestAcrossNodes(t *testing.T) {
	p := netnstest.Setup(t)
	for _, n := range []int{2, 4} {
		t.Run(fmt.Sprintf("ranks=%d", n), func(t *testing.T) {
			out := launchAcross(t, p, "putget", n)
			// Each rank reaches the ranks of the other node over TCP, the one
			// beside it (with four ranks) over shared memory.
			for r := 0; r < n; r++ {
				want := fmt.Sprintf("[%d] ok paths", r)
				for q := 0; q < n; q++ {
					if q == r {
						continue
					}
					path := "shm"
					if q%2 != r%2 {
						path = "tcp"
					}
					want += fmt.Sprintf(" %d:%s", q, path)
				}
				if !strings.Contains(out, want+"\n") {
					t.Fatalf("rank %d did not finish, or not over the paths expected (%q):\n%s", r, want, out)
				}
			}
			start := time.Now()
			out = launchAcross(t, p, "deadpeer", n)
			for r := 0; r < n-1; r++ {
				if !strings.Contains(out, fmt.Sprintf("[%d] undeliverable", r)) {
					t.Fatalf("rank %d did not see rank %d die:\n%s", r, n-1, out)
				}
			}
			t.Logf("dead-peer job of %d ranks across nodes done in %v", n, time.Since(start))
		})
	}
}
