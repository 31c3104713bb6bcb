package soft

import (
	"testing"

	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/verbstest"
)

// TestTCPPollLooksBeforeReading: a caller spinning on Poll over an idle link,
// with no gap between the rounds' looks, makes no read of the empty socket: the
// rounds look at its readiness first (a read that finds nothing takes the
// socket's lock, which the delivery of the next segment waits for).
func TestTCPPollLooksBeforeReading(t *testing.T) {
	setForTest(t, &tcpPollGap, 0)
	t.Setenv(EnvPath, "tcp")
	p := verbstest.NewPair(t, softEnv)
	l := p.A.QP.(*qp).link
	if l == nil {
		t.Fatal("the pair is not joined over TCP")
	}
	if !l.viaPoller {
		t.Skip("the link is not served by the poller")
	}
	before := l.nEmpty.Load()
	var wc [4]verbs.WorkCompletion
	for i := 0; i < 1000; i++ {
		if _, err := p.A.CQ.Poll(wc[:]); err != nil {
			t.Fatal(err)
		}
	}
	if n := l.nEmpty.Load() - before; n > 0 {
		t.Fatalf("1000 polls of an idle link: %d reads found nothing, want none", n)
	}
}
