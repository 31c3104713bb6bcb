package nic

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/bootstrap"
	"github.com/goportals/goportals/internal/netnstest"
)

// launchAcross runs a two-rank job in role with rank r in network namespace
// r mod 2 of p: two nodes, joined by veth, so the ranks' queue pairs take the
// soft provider's TCP path. The bootstrap runs on a unix socket, which every
// namespace of the machine reaches.
func launchAcross(t *testing.T, p *netnstest.Pair, role string) string {
	t.Helper()
	var out lockedBuffer
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	res, err := bootstrap.Launch(ctx, bootstrap.LaunchConfig{N: 2, Argv: p.WrapByRank(os.Args[0], "-test.run=^$"),
		Env: childEnv(role), Stdout: &out, Stderr: &out, Prefix: true, Timeout: 60 * time.Second, Network: "unix"})
	if e := checkJob(out.String(), res, err); e != nil {
		t.Fatal(e)
	}
	return out.String()
}

// TestAcrossNodes runs the put/get/atomics job and the dead-peer job with the two
// ranks on two nodes (network namespaces joined by veth): data verified byte for
// byte, and a rank that dies makes the survivor's operations complete with
// NI_UNDELIVERABLE instead of hanging.
func TestAcrossNodes(t *testing.T) {
	p := netnstest.Setup(t)
	if out := launchAcross(t, p, "putget"); !strings.Contains(out, "[0] ok") {
		t.Fatalf("rank 0 did not finish:\n%s", out)
	}
	start := time.Now()
	if out := launchAcross(t, p, "deadpeer"); !strings.Contains(out, "[0] undeliverable") {
		t.Fatalf("rank 0 did not see the peer die:\n%s", out)
	}
	t.Logf("dead-peer job across nodes done in %v", time.Since(start))
}
