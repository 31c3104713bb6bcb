package nic

import (
	"bytes"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/bootstrap"
)

const rvTestKey = "rendezvous-test-secret"

// TestRendezvousKeyNeverTravels: asking another node's rendezvous, a process
// proves its job key without sending it, and sends no request to a rendezvous
// that cannot prove the key back.
func TestRendezvousKeyNeverTravels(t *testing.T) {
	t.Setenv(bootstrap.EnvJobKey, rvTestKey)
	if k, _ := bootstrap.JobKey(); string(k) != rvTestKey {
		t.Skip("this test process joined a job (its key is not the variable's)")
	}
	ni, err := rulesSolo(t).NIInit(IfaceDefault, NIMatching|NIPhysical, PIDAny, nil)
	if err != nil {
		t.Fatal(err)
	}
	const pid = 7
	port, _ := rvPort(pid)
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.2", strconv.Itoa(port)))
	if err != nil {
		t.Skipf("no impostor rendezvous at 127.0.0.2:%d: %v", port, err)
	}
	defer ln.Close()
	got := make(chan []byte, 1)
	go func() { // an impostor that does not know the key
		c, err := ln.Accept()
		if err != nil {
			got <- nil
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Minute))
		var seen bytes.Buffer
		first, _ := readFrame(io.TeeReader(c, &seen))
		writeFrame(c, append(bytes.Repeat([]byte{1}, bootstrap.ChallengeLen), make([]byte, bootstrap.ChallengeLen)...))
		_ = first
		io.Copy(&seen, c) // whatever else the requester sends, until it closes
		got <- seen.Bytes()
	}()
	other := ProcessID{NID: nidOf(net.IPv4(127, 0, 0, 2).To4()), PID: pid}
	_, err = ni.exchangeRemote(t.Context(), other, &connectRequest{from: ni.physID()})
	if err == nil || !strings.Contains(err.Error(), "prove") {
		t.Fatalf("exchange with an impostor: %v, want an error saying it did not prove the key", err)
	}
	wire := <-got
	if bytes.Contains(wire, []byte(rvTestKey)) {
		t.Fatalf("the job key travelled in clear: %q", wire)
	}
	if len(wire) > 4+bootstrap.ChallengeLen {
		t.Fatalf("the requester sent %d bytes to a rendezvous that did not prove the key, want only its challenge", len(wire))
	}
}

// TestRendezvousRefusesAWrongProof: a requester that cannot prove the job key
// gets the empty refusal; one that can gets an answer.
func TestRendezvousRefusesAWrongProof(t *testing.T) {
	t.Setenv(bootstrap.EnvJobKey, rvTestKey)
	if k, _ := bootstrap.JobKey(); string(k) != rvTestKey {
		t.Skip("this test process joined a job (its key is not the variable's)")
	}
	ni, err := rulesSolo(t).NIInit(IfaceDefault, NIMatching|NIPhysical, 3456, nil)
	if err != nil {
		t.Fatal(err)
	}
	port, _ := rvPort(ni.self.PID)
	for _, c := range []struct {
		key    string
		refuse bool
	}{{"another-job", true}, {rvTestKey, false}} {
		conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatal(err)
		}
		conn.SetDeadline(time.Now().Add(time.Minute))
		rep, err := rvHandshake(conn, []byte(c.key), (&connectRequest{from: ni.physID()}).encode())
		conn.Close()
		if c.refuse && err == nil {
			t.Fatalf("key %q: answered %x, want a refusal", c.key, rep)
		}
		if !c.refuse && (err != nil || len(rep) == 0) {
			t.Fatalf("key %q: %x %v, want an answer", c.key, rep, err)
		}
	}
}
