package bootstrap

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"
)

// startTestAgent serves an agent with key on a loopback port until the test ends.
func startTestAgent(t *testing.T, key string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeAgent(ctx, ln, key) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeAgent: %v", err)
		}
	})
	return ln.Addr().String()
}

// readMsg reads one agent message (a hang guard on the connection bounds it).
func readMsg(t *testing.T, r *bufio.Reader) agentMsg {
	t.Helper()
	line, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatalf("reading the agent: %v", err)
	}
	var m agentMsg
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatalf("agent line %q: %v", line, err)
	}
	return m
}

// TestAgentBoundsTheUnauthenticatedLine: a stranger that sends a line longer than
// maxAgentAuthLine without a newline is cut off with a refusal once the bound is
// reached; the agent does not buffer what follows.
func TestAgentBoundsTheUnauthenticatedLine(t *testing.T) {
	addr := startTestAgent(t, "agent-secret")
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute)) // a hang guard
	r := bufio.NewReader(c)
	if m := readMsg(t, r); m.Nonce == "" {
		t.Fatalf("the agent's first message %+v carries no challenge", m)
	}
	go c.Write(bytes.Repeat([]byte("a"), 2*maxAgentAuthLine))
	if m := readMsg(t, r); !strings.Contains(m.Fatal, "too long") {
		t.Fatalf("after %d bytes without a newline: %+v, want a refusal saying the line is too long", 2*maxAgentAuthLine, m)
	}
}

// TestAgentLimitsUnauthenticatedConnections: beyond maxAgentUnauth connections
// that have not proved the key, the agent refuses new ones at once.
func TestAgentLimitsUnauthenticatedConnections(t *testing.T) {
	addr := startTestAgent(t, "agent-secret")
	for i := range maxAgentUnauth {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Minute))
		if m := readMsg(t, bufio.NewReader(c)); m.Nonce == "" {
			t.Fatalf("connection %d: first message %+v, want a challenge", i, m)
		}
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	if m := readMsg(t, bufio.NewReader(c)); !strings.Contains(m.Fatal, "too many") {
		t.Fatalf("connection %d: %+v, want a refusal (too many unauthenticated connections)", maxAgentUnauth+1, m)
	}
}

// TestAgentKeyNeverTravels: the launcher proves the agents' key without sending
// it, and sends nothing of the job to an agent that cannot prove it back.
func TestAgentKeyNeverTravels(t *testing.T) {
	const key = "the-agents-secret-key"
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	seen := make(chan string, 1)
	go func() { // an impostor agent that does not know the key
		c, err := ln.Accept()
		if err != nil {
			seen <- ""
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Minute))
		enc := json.NewEncoder(c)
		enc.Encode(agentMsg{Nonce: strings.Repeat("ab", 32)})
		r := bufio.NewReader(c)
		var got bytes.Buffer
		line, _ := r.ReadBytes('\n')
		got.Write(line)
		enc.Encode(agentMsg{Proof: strings.Repeat("00", 32)})
		rest, _ := r.ReadBytes('\n') // the job's request, if the launcher sends it
		got.Write(rest)
		seen <- got.String()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := Launch(ctx, LaunchConfig{N: 1, Argv: []string{"true"}, Hosts: []string{ln.Addr().String()}, AgentKey: key,
		Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}})
	if err == nil {
		t.Fatalf("a job through an agent that cannot prove the key succeeded: %+v", res)
	}
	if !strings.Contains(err.Error(), "prove") {
		t.Fatalf("launch error %v does not say the agent failed to prove the key", err)
	}
	wire := <-seen
	if strings.Contains(wire, key) {
		t.Fatalf("the key travelled in clear: %q", wire)
	}
	if strings.Contains(wire, "argv") || strings.Contains(wire, EnvJobKey) {
		t.Fatalf("the job was sent to an agent that did not prove the key: %q", wire)
	}
}

// TestAgentRefusesAWrongProof: a launcher with another key is refused ("wrong
// agent key") by a real agent.
func TestAgentRefusesAWrongProof(t *testing.T) {
	addr := startTestAgent(t, "agent-secret")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := Launch(ctx, LaunchConfig{N: 1, Argv: []string{"true"}, Hosts: []string{addr}, AgentKey: "another-secret",
		Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}})
	if err == nil || !strings.Contains(err.Error(), "wrong agent key") {
		t.Fatalf("launch with another key: %v, want the agent's refusal", err)
	}
	res, err := Launch(ctx, LaunchConfig{N: 1, Argv: []string{"true"}, Hosts: []string{addr}, AgentKey: "agent-secret",
		Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("launch with the right key: %v %+v", err, res)
	}
}
