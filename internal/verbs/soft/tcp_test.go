package soft

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/bootstrap"
	"github.com/goportals/goportals/internal/verbs"
)

// rawHello dials c's listener and greets queue pair qpn with key; it returns the
// listener's one-byte answer.
func rawHello(t *testing.T, c *Context, qpn uint32, nonce uint64, key []byte) byte {
	t.Helper()
	conn, ans := helloFrom(t, c, nil, qpn, nonce, 0, 0, key)
	conn.Close()
	return ans
}

// helloFrom dials c's listener from local (nil: any address), proves key as the
// dialer of a queue pair (srcQPN, srcNonce) to queue pair qpn, and returns the
// connection and the listener's answer (whose proof, after helloOK, it checks).
func helloFrom(t *testing.T, c *Context, local net.Addr, qpn uint32, nonce uint64, srcQPN uint32, srcNonce uint64, key []byte) (net.Conn, byte) {
	t.Helper()
	ip := net.IP(c.tcp.ip[:])
	d := net.Dialer{LocalAddr: local, Timeout: 5 * time.Second}
	conn, err := d.Dial("tcp", net.JoinHostPort(ip.String(), strconv.Itoa(int(c.tcp.port))))
	if err != nil {
		t.Fatal(err)
	}
	conn.SetDeadline(time.Now().Add(time.Minute))
	theirs := make([]byte, bootstrap.ChallengeLen)
	if _, err := io.ReadFull(conn, theirs); err != nil {
		t.Fatalf("reading the listener's challenge: %v", err)
	}
	h := make([]byte, helloLen)
	binary.LittleEndian.PutUint32(h[0:], helloMagic)
	binary.LittleEndian.PutUint32(h[4:], qpn)
	binary.LittleEndian.PutUint64(h[8:], nonce)
	binary.LittleEndian.PutUint32(h[16:], srcQPN)
	binary.LittleEndian.PutUint64(h[20:], srcNonce)
	binary.LittleEndian.PutUint16(h[28:], bootstrap.ChallengeLen)
	mine := bootstrap.Challenge()
	msg := append(append(h, mine...), bootstrap.ProveKey(key, helloProofDialer, theirs, mine, h)...)
	if _, err := conn.Write(msg); err != nil {
		t.Fatal(err)
	}
	var ans [1]byte
	if _, err := io.ReadFull(conn, ans[:]); err != nil {
		t.Fatal(err)
	}
	if ans[0] == helloOK {
		proof := make([]byte, bootstrap.ChallengeLen)
		if _, err := io.ReadFull(conn, proof); err != nil {
			t.Fatalf("reading the listener's proof: %v", err)
		}
		if !bytes.Equal(proof, bootstrap.ProveKey(key, helloProofListener, mine, theirs)) {
			t.Fatal("the listener accepted without proving the key")
		}
	}
	conn.SetDeadline(time.Time{})
	return conn, ans[0]
}

// TestTCPJobKey checks that a TCP connection presenting another job key, or
// naming a queue pair with a wrong nonce, is refused, and that the job's key is
// accepted.
func TestTCPJobKey(t *testing.T) {
	SetJobKey([]byte("the-job-key"))
	defer SetJobKey(nil)
	c, _, _, q := listeningQP(t)
	defer c.Close()
	if got := rawHello(t, c, q.Num(), c.nonce, []byte("another-key")); got != helloKey {
		t.Fatalf("wrong key: answer %d, want refusal %d", got, helloKey)
	}
	if got := rawHello(t, c, q.Num(), c.nonce^1, []byte("the-job-key")); got != helloNoQP {
		t.Fatalf("wrong nonce: answer %d, want %d", got, helloNoQP)
	}
	if got := rawHello(t, c, q.Num(), c.nonce, []byte("the-job-key")); got != helloOK {
		t.Fatalf("right key: answer %d, want %d", got, helloOK)
	}
	// A key change (another job) makes the old key a stranger's.
	SetJobKey([]byte("a-third-key"))
	if got := rawHello(t, c, q.Num(), c.nonce, []byte("the-job-key")); got != helloKey {
		t.Fatalf("after the key changed, the old key: answer %d, want refusal %d", got, helloKey)
	}
}

// TestTCPJobKeyFollowsJob: without SetJobKey, the TCP listener checks the key of
// the job the process joined through the bootstrap: a hello with another key, or
// with none, is refused; the job's key is accepted.
func TestTCPJobKeyFollowsJob(t *testing.T) {
	srv, err := bootstrap.NewServer(bootstrap.ServerConfig{Size: 1})
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(context.Background()) }()
	defer func() {
		srv.Close()
		<-served
	}()
	// Runs after the environment is restored: the process goes back to no job.
	t.Cleanup(func() {
		b, err := bootstrap.Open(context.Background())
		if err == nil {
			b.Close()
		}
	})
	cfg := srv.ClientConfig(0)
	t.Setenv(bootstrap.EnvAddr, cfg.Addr)
	t.Setenv(bootstrap.EnvRank, "0")
	t.Setenv(bootstrap.EnvSize, "1")
	t.Setenv(bootstrap.EnvJobKey, cfg.JobKey)
	b, err := bootstrap.Open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	c, _, _, q := listeningQP(t)
	defer c.Close()
	if got := rawHello(t, c, q.Num(), c.nonce, nil); got != helloKey {
		t.Fatalf("no key: answer %d, want refusal %d", got, helloKey)
	}
	if got := rawHello(t, c, q.Num(), c.nonce, []byte("another-job")); got != helloKey {
		t.Fatalf("another key: answer %d, want refusal %d", got, helloKey)
	}
	if got := rawHello(t, c, q.Num(), c.nonce, []byte(srv.JobKey())); got != helloOK {
		t.Fatalf("the job's key: answer %d, want %d", got, helloOK)
	}
}

// listeningQP opens a context with a queue pair on a 16-entry completion queue
// and its TCP listener started; the test is skipped where no listener can be
// had. The caller closes the context (with its own defers, in their order).
func listeningQP(t *testing.T) (*Context, verbs.PD, verbs.CQ, verbs.QP) {
	t.Helper()
	c, err := Open()
	if err != nil {
		t.Fatal(err)
	}
	pd, err := c.AllocPD()
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	cq, err := c.CreateCQ(16)
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	q, err := pd.CreateQP(verbs.QPAttr{SendCQ: cq, RecvCQ: cq})
	if err != nil {
		c.Close()
		t.Fatal(err)
	}
	c.listen()
	if c.tcp.ln == nil {
		c.Close()
		t.Skip("no TCP listener on this machine")
	}
	return c, pd, cq, q
}

// setForTest sets a tunable for the test and restores it in a cleanup: one
// registered before the test's contexts and pairs, so it runs after they are
// closed (a deferred restore raced their progress goroutines, which read it).
func setForTest(t *testing.T, p *time.Duration, v time.Duration) {
	old := *p
	*p = v
	t.Cleanup(func() { *p = old })
}
