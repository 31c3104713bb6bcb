package soft

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/bootstrap"
	"github.com/goportals/goportals/internal/verbs"
)

// The package's tests (and the children they start, which inherit the
// environment) share a job key, as the processes of one job do: a process
// without one reaches its own node only.
func init() {
	if os.Getenv(bootstrap.EnvJobKey) == "" {
		os.Setenv(bootstrap.EnvJobKey, "soft-provider-tests")
	}
}

// TestTCPWithoutJobKeyIsNodeLocal: a process with no job key listens on the
// loopback interface only, accepts a hello from its own node, refuses one from
// another address, and refuses to connect to another node with ErrNoJobKey.
func TestTCPWithoutJobKeyIsNodeLocal(t *testing.T) {
	t.Setenv(bootstrap.EnvJobKey, "")
	SetJobKey(nil)
	if k, known := bootstrap.JobKey(); !known || len(k) != 0 {
		t.Skip("this process joined a job (it has a key)")
	}
	c, _, _, q := listeningQP(t)
	defer c.Close()
	var err error
	if ip := net.IP(c.tcp.ip[:]); !ip.IsLoopback() {
		t.Fatalf("without a job key the listener is on %v, want loopback", ip)
	}
	if got := rawHello(t, c, q.Num(), c.nonce, nil); got != helloOK {
		t.Fatalf("hello from this node without a key: answer %d, want %d", got, helloOK)
	}
	// A hello from a non-loopback source address is another node's as far as
	// the listener can tell.
	if node := bootstrap.NodeAddr(); !node.IsLoopback() {
		conn, ans := helloFrom(t, c, &net.TCPAddr{IP: node}, q.Num(), c.nonce, 0, 0, nil)
		conn.Close()
		if ans != helloKey {
			t.Fatalf("hello from %v without a key: answer %d, want refusal %d", node, ans, helloKey)
		}
	}
	a, ok := decodeAddress(q.Address())
	if !ok {
		t.Fatal("cannot decode the queue pair's own address")
	}
	a.boot[0] ^= 0xff // another node
	a.qpn = 5
	err = q.Connect(a.encode())
	if !errors.Is(err, bootstrap.ErrNoJobKey) || !errors.Is(err, verbs.ErrUnreachable) {
		t.Fatalf("connect to another node without a job key: %v, want ErrUnreachable and ErrNoJobKey", err)
	}
}

// TestTCPHelloKeyNeverTravels: dialing a peer, a process proves its job key
// without sending it, and gives up on a listener that accepts without proving
// the key back.
func TestTCPHelloKeyNeverTravels(t *testing.T) {
	const key = "soft-hello-secret"
	SetJobKey([]byte(key))
	defer SetJobKey(nil)
	c, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	pd, err := c.AllocPD()
	if err != nil {
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(16)
	if err != nil {
		t.Fatal(err)
	}
	q, err := pd.CreateQP(verbs.QPAttr{SendCQ: cq, RecvCQ: cq})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	seen := make(chan []byte, 1)
	go func() { // an impostor that does not know the key but says yes
		conn, err := ln.Accept()
		if err != nil {
			seen <- nil
			return
		}
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(time.Minute))
		conn.Write(bootstrap.Challenge())
		b := make([]byte, helloLen+2*bootstrap.ChallengeLen)
		n, _ := io.ReadFull(conn, b)
		conn.Write(append([]byte{helloOK}, make([]byte, bootstrap.ChallengeLen)...))
		rest, _ := io.ReadAll(conn)
		seen <- append(b[:n], rest...)
	}()
	a, ok := decodeAddress(q.Address())
	if !ok {
		t.Fatal("cannot decode the queue pair's own address")
	}
	copy(a.tcpIP[:], net.IPv4(127, 0, 0, 1).To16())
	a.tcpPort = uint16(ln.Addr().(*net.TCPAddr).Port)
	conn, err := dialPeer(a, q.Num(), c.nonce)
	if err == nil {
		conn.Close()
		t.Fatal("dialing an impostor that cannot prove the key succeeded")
	}
	if !errors.Is(err, verbs.ErrUnreachable) || !strings.Contains(err.Error(), "prove") {
		t.Fatalf("dialing an impostor: %v, want ErrUnreachable saying it did not prove the key", err)
	}
	wire := <-seen
	if bytes.Contains(wire, []byte(key)) {
		t.Fatalf("the job key travelled in clear: %q", wire)
	}
	if len(wire) != helloLen+2*bootstrap.ChallengeLen {
		t.Fatalf("the dialer sent %d bytes, want only its hello (%d)", len(wire), helloLen+2*bootstrap.ChallengeLen)
	}
}
