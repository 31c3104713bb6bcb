package nic

import "testing"

// TestListenerPollAllocatesNothing: the calls that drive progress also look for
// connection requests (every listenerPollEvery rounds); with none waiting that
// look allocates nothing (a polling loop's rounds must not feed the collector).
func TestListenerPollAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates on its own")
	}
	nis := newNIs(t, 1, NINoMatching|NIPhysical)
	p := nis[0].proc
	if c := p.claimForPoll(); c == nil || c.ln == nil {
		t.Skip("this process has no rendezvous listener")
	}
	p.pollListener()
	if n := testing.AllocsPerRun(200, p.pollListener); n != 0 {
		t.Fatalf("a listener poll with nothing waiting allocates %v times", n)
	}
}
