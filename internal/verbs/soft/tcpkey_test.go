package soft

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"strconv"
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
	c.listen()
	if c.tcp.ln == nil {
		t.Skip("no TCP listener on this machine")
	}
	if ip := net.IP(c.tcp.ip[:]); !ip.IsLoopback() {
		t.Fatalf("without a job key the listener is on %v, want loopback", ip)
	}
	if got := rawHello(t, c, q.Num(), c.nonce, nil); got != helloOK {
		t.Fatalf("hello from this node without a key: answer %d, want %d", got, helloOK)
	}
	// A hello from a non-loopback source address is another node's as far as
	// the listener can tell.
	if node := bootstrap.NodeAddr(); !node.IsLoopback() {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: node}, Timeout: 5 * time.Second}
		conn, err := d.Dial("tcp", net.JoinHostPort(net.IP(c.tcp.ip[:]).String(), strconv.Itoa(int(c.tcp.port))))
		if err != nil {
			t.Fatal(err)
		}
		h := make([]byte, helloLen)
		binary.LittleEndian.PutUint32(h[0:], helloMagic)
		binary.LittleEndian.PutUint32(h[4:], q.Num())
		binary.LittleEndian.PutUint64(h[8:], c.nonce)
		conn.SetDeadline(time.Now().Add(10 * time.Second))
		conn.Write(h)
		var ans [1]byte
		_, err = io.ReadFull(conn, ans[:])
		conn.Close()
		if err != nil || ans[0] != helloKey {
			t.Fatalf("hello from %v without a key: answer %d (%v), want refusal %d", node, ans[0], err, helloKey)
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
