package soft

import (
	"testing"
	"time"

	"github.com/goportals/goportals/internal/verbs"
)

// A progress round resolves receive buffers without holding their regions
// (localInRound): Dereg must not return, and so must not unpin, while a round
// runs, and a round after Dereg must refuse the region.
func TestDeregWaitsForProgressRound(t *testing.T) {
	c, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	m, err := p.RegMR(buf, verbs.AccessLocalWrite)
	if err != nil {
		t.Fatal(err)
	}
	pid := p.(*pd).id
	c.progMu.Lock() // a round is running (as Context.progress runs one)
	c.inRound.Store(true)
	if b, ok := c.localInRound(m.LKey(), m.Addr(), 64, verbs.AccessLocalWrite, pid); !ok || len(b) != 64 {
		c.progMu.Unlock()
		t.Fatalf("a live region refused in a round: %v", ok)
	}
	done := make(chan error, 1)
	go func() { done <- m.Dereg() }()
	select {
	case err := <-done:
		c.inRound.Store(false)
		c.progMu.Unlock()
		t.Fatalf("Dereg returned (%v) while a progress round could still be copying into the region", err)
	case <-time.After(50 * time.Millisecond):
		// Dereg still waits: nothing here measures time, a wrong Dereg fails
		// above at once or with any delay shorter than this one.
	}
	c.inRound.Store(false)
	c.progMu.Unlock()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	c.progMu.Lock()
	_, ok := c.localInRound(m.LKey(), m.Addr(), 64, verbs.AccessLocalWrite, pid)
	c.progMu.Unlock()
	if ok {
		t.Fatal("a round resolved a deregistered region")
	}
}
