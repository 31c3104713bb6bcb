package soft

import (
	"bytes"
	"io"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/netnstest"
	"github.com/goportals/goportals/internal/verbs"
)

// hangGuard bounds the waits below: far beyond the link's failure budget, far
// below the kernel's default retransmission give-up (about 15 minutes).
const hangGuard = 90 * time.Second

// linkDown takes the network device of namespace ns down: the node vanishes
// without a FIN or a reset.
func linkDown(t *testing.T, ns string) {
	t.Helper()
	out, err := exec.Command("ip", "-n", ns, "-o", "link", "show").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.SplitN(line, ": ", 3)
		if len(f) < 2 || f[1] == "lo" {
			continue
		}
		dev, _, _ := strings.Cut(f[1], "@")
		if o, err := exec.Command("ip", "-n", ns, "link", "set", "dev", dev, "down").CombinedOutput(); err != nil {
			t.Fatalf("ip link set %s down: %v %s", dev, err, o)
		}
		return
	}
	t.Fatalf("no device in namespace %s", ns)
}

// TestTCPPeerVanishesMidTransfer: the peer's node disappears (its link goes down,
// no FIN, no reset) while a 1 MiB WRITE is in flight. Unacknowledged data must
// fail the link within the user timeout, and the WRITE completes with an error
// instead of waiting for the kernel's retransmissions to give up.
func TestTCPPeerVanishesMidTransfer(t *testing.T) {
	h := netnstest.SetupHost(t)
	childWrap = h.Wrap()
	t.Cleanup(func() { childWrap = nil })
	c, s := startChild(t)
	if p := s.qp.(*qp).Path(); p != "tcp" {
		t.Fatalf("path %q between nodes, want tcp", p)
	}
	const size = 1 << 20
	raddr, rkey := c.reg("p", size, rw, 1)
	lm := regLocal(t, s, make([]byte, size), rw)
	if wc := post(t, s, verbs.SendWR{Opcode: verbs.OpRDMAWrite, SG: sge(lm, size), RemoteAddr: raddr, RKey: rkey}); wc.Status != verbs.StatusSuccess {
		t.Fatalf("write before the partition: %v", wc.Status)
	}
	linkDown(t, h.Name)
	// Several WRITEs so that data stays unacknowledged in the socket.
	var wrs []verbs.SendWR
	for i := range 8 {
		wrs = append(wrs, verbs.SendWR{ID: uint64(i), Opcode: verbs.OpRDMAWrite, SG: sge(lm, size), RemoteAddr: raddr, RKey: rkey, Flags: verbs.SendSignaled})
	}
	if err := s.qp.PostSend(wrs); err != nil {
		t.Fatal(err)
	}
	wc, err := waitWC(s.cq, hangGuard)
	if err != nil {
		t.Fatalf("no completion after the peer vanished mid-transfer: %v", err)
	}
	if wc.Status == verbs.StatusSuccess {
		t.Fatalf("write to a vanished node completed successfully: %+v", wc)
	}
	if wc.Status != verbs.StatusRetryExceeded {
		t.Fatalf("first completion %v, want %v", wc.Status, verbs.StatusRetryExceeded)
	}
}

// TestTCPPeerNeverDials: we are the higher endpoint, so the peer must dial us,
// but it never does. After the connect deadline the link fails and the WRITE
// posted meanwhile completes with an error.
func TestTCPPeerNeverDials(t *testing.T) {
	setForTest(t, &tcpConnectTimeout, 200*time.Millisecond)
	SetJobKey([]byte("never-dials"))
	defer SetJobKey(nil)
	c, pd, cq, q := listeningQP(t)
	defer c.Close()
	a, ok := decodeAddress(q.Address())
	if !ok {
		t.Fatal("cannot decode the queue pair's own address")
	}
	a.boot[0] ^= 0xff // another node
	a.netns++
	a.qpn, a.nonce = 77, 12345
	copy(a.tcpIP[:], net.ParseIP("0.0.0.1").To16()) // lower than ours: the peer dials
	if dials(c.tcp.ip, c.tcp.port, q.Num(), a.tcpIP, a.tcpPort, a.qpn) {
		t.Fatal("test setup: this side would dial")
	}
	if err := q.Connect(a.encode()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	mr, err := pd.RegMR(buf, rw)
	if err != nil {
		t.Fatal(err)
	}
	if err := q.PostSend([]verbs.SendWR{{ID: 9, Opcode: verbs.OpRDMAWrite, Flags: verbs.SendSignaled, SG: sge(mr, 64), RemoteAddr: 1, RKey: 1}}); err != nil {
		t.Fatal(err)
	}
	wc, err := waitWC(cq, hangGuard)
	if err != nil {
		t.Fatalf("no completion on a link whose peer never connects: %v", err)
	}
	if wc.ID != 9 || wc.Status != verbs.StatusRetryExceeded {
		t.Fatalf("completion %+v, want id 9 with %v", wc, verbs.StatusRetryExceeded)
	}
	if st := q.State(); st != verbs.QPError {
		t.Fatalf("queue pair state %v after the connect deadline, want error", st)
	}
}

// zeroLengthSGERead READs 16 bytes into three SGEs of 8, 0 and 8 bytes: the bytes
// after the empty element must land in the third, on either path.
func zeroLengthSGERead(t *testing.T, path string) {
	c, s := startChild(t)
	if p := s.qp.(*qp).Path(); p != path {
		t.Fatalf("path %q, want %s", p, path)
	}
	raddr, rkey := c.reg("z", 4096, rw, 1)
	src := make([]byte, 16)
	for i := range src {
		src[i] = byte(i + 1)
	}
	sm := regLocal(t, s, src, rw)
	if wc := post(t, s, verbs.SendWR{Opcode: verbs.OpRDMAWrite, SG: sge(sm, 16), RemoteAddr: raddr, RKey: rkey}); wc.Status != verbs.StatusSuccess {
		t.Fatalf("write: %v", wc.Status)
	}
	back := make([]byte, 32)
	bm := regLocal(t, s, back, rw)
	sg := []verbs.SGE{
		{Addr: bm.Addr(), Length: 8, LKey: bm.LKey()},
		{Addr: bm.Addr() + 8, Length: 0, LKey: bm.LKey()},
		{Addr: bm.Addr() + 16, Length: 8, LKey: bm.LKey()},
	}
	if wc := post(t, s, verbs.SendWR{Opcode: verbs.OpRDMARead, SG: sg, RemoteAddr: raddr, RKey: rkey}); wc.Status != verbs.StatusSuccess {
		t.Fatalf("read: %v", wc.Status)
	}
	want := append(append(append([]byte{}, src[:8]...), make([]byte, 8)...), src[8:]...)
	if !bytes.Equal(back[:24], want) {
		t.Fatalf("READ into [8,0,8]: got %v, want %v", back[:24], want)
	}
	// And a WRITE gathered from [8,0,8] carries the 16 bytes.
	for i := range back {
		back[i] = byte(100 + i)
	}
	if wc := post(t, s, verbs.SendWR{Opcode: verbs.OpRDMAWrite, SG: sg, RemoteAddr: raddr + 64, RKey: rkey}); wc.Status != verbs.StatusSuccess {
		t.Fatalf("write: %v", wc.Status)
	}
	got := make([]byte, 16)
	gm := regLocal(t, s, got, rw)
	if wc := post(t, s, verbs.SendWR{Opcode: verbs.OpRDMARead, SG: sge(gm, 16), RemoteAddr: raddr + 64, RKey: rkey}); wc.Status != verbs.StatusSuccess {
		t.Fatalf("read back: %v", wc.Status)
	}
	if want := append(append([]byte{}, back[:8]...), back[16:24]...); !bytes.Equal(got, want) {
		t.Fatalf("WRITE from [8,0,8]: got %v, want %v", got, want)
	}
}

// TestZeroLengthSGEShm and TestZeroLengthSGETCP: both paths treat an empty
// scatter/gather element alike (it holds no bytes; the next one goes on).
func TestZeroLengthSGEShm(t *testing.T) { zeroLengthSGERead(t, "shm") }

func TestZeroLengthSGETCP(t *testing.T) {
	h := netnstest.SetupHost(t)
	childWrap = h.Wrap()
	t.Cleanup(func() { childWrap = nil })
	zeroLengthSGERead(t, "tcp")
}

// TestTCPUnconnectedQueuePairDropsItsStream: a dialer's stream to a queue pair
// that never connects is parked, then closed at the connect deadline, so the
// dialer's work fails instead of waiting for answers.
func TestTCPUnconnectedQueuePairDropsItsStream(t *testing.T) {
	setForTest(t, &tcpConnectTimeout, 200*time.Millisecond)
	SetJobKey([]byte("parked"))
	defer SetJobKey(nil)
	c, _, _, q := listeningQP(t)
	defer c.Close()
	conn, ans := helloFrom(t, c, nil, q.Num(), c.nonce, 3, 99, []byte("parked"))
	defer conn.Close()
	if ans != helloOK {
		t.Fatalf("hello to a queue pair in init: %d, want %d", ans, helloOK)
	}
	conn.SetDeadline(time.Now().Add(hangGuard))
	var b [1]byte
	if _, err := conn.Read(b[:]); err != io.EOF {
		t.Fatalf("stream to a queue pair that never connects: read %v, want EOF (closed at the connect deadline)", err)
	}
}
