package nic

import (
	"errors"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/goportals/goportals/internal/bootstrap"
)

// ephemeralRange reads the kernel's range of ports for outgoing connections.
func ephemeralRange(t *testing.T) (lo, hi int) {
	t.Helper()
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skipf("no ephemeral port range to check against: %v", err)
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		t.Fatalf("ip_local_port_range %q", b)
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		t.Fatalf("ip_local_port_range %q", b)
	}
	return lo, hi
}

// TestRendezvousPortsOutsideEphemeralRange: no pid's rendezvous port lies in the
// range the kernel hands out to outgoing connections, where any connection of
// any process could take it.
func TestRendezvousPortsOutsideEphemeralRange(t *testing.T) {
	lo, hi := ephemeralRange(t)
	first, ok1 := rvPort(0)
	last, ok2 := rvPort(rvPIDSpan - 1)
	if !ok1 || !ok2 {
		t.Fatal("pids below rvPIDSpan have no rendezvous port")
	}
	if last > 65535 || first < 1024 {
		t.Fatalf("rendezvous ports %d-%d outside 1024-65535", first, last)
	}
	if first <= hi && last >= lo {
		t.Fatalf("rendezvous ports %d-%d overlap the ephemeral range %d-%d", first, last, lo, hi)
	}
}

// TestPIDPortTakenNamesTheBindError: a pid whose rendezvous port an unrelated
// socket holds (here an outgoing connection bound to it) is PID_IN_USE, and the
// message says which port and why.
func TestPIDPortTakenNamesTheBindError(t *testing.T) {
	const pid = 1234
	port, ok := rvPort(pid)
	if !ok {
		t.Fatal("pid 1234 has no rendezvous port")
	}
	srv, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	go func() {
		for {
			c, err := srv.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	d := net.Dialer{LocalAddr: &net.TCPAddr{Port: port}}
	c, err := d.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Skipf("cannot bind an outgoing connection to port %d: %v", port, err)
	}
	defer c.Close()
	_, err = rulesSolo(t).NIInit(IfaceDefault, NIMatching|NIPhysical, pid, nil)
	wantErrno(t, "NIInit with the rendezvous port taken", err, PIDInUse)
	if msg := err.Error(); !strings.Contains(msg, strconv.Itoa(port)) || !strings.Contains(msg, "in use") {
		t.Fatalf("PID_IN_USE message %q does not name port %d and the bind error", msg, port)
	}
}

// TestRendezvousWithoutJobKeyIsNodeLocal: a process with no job key (a lone
// process without PTL_JOB_KEY) claims its pid's port on the loopback interface
// only, and does not ask another node at all: ErrNoJobKey says why.
func TestRendezvousWithoutJobKeyIsNodeLocal(t *testing.T) {
	t.Setenv(bootstrap.EnvJobKey, "")
	if k, known := bootstrap.JobKey(); !known || len(k) != 0 {
		t.Skip("this test process joined a job (it has a key)")
	}
	ni, err := rulesSolo(t).NIInit(IfaceDefault, NIMatching|NIPhysical, 2345, nil)
	if err != nil {
		t.Fatal(err)
	}
	tr := ni.proc.pid.tcp
	if tr == nil {
		t.Fatal("pid 2345 has no TCP rendezvous")
	}
	if a := tr.ln.Addr().(*net.TCPAddr); !a.IP.IsLoopback() {
		t.Fatalf("without a job key the rendezvous listens on %v, want loopback only", a)
	}
	other := ProcessID{NID: nidOf(net.IPv4(192, 0, 2, 77).To4()), PID: 7}
	_, err = ni.exchangeRemote(t.Context(), other, &connectRequest{})
	if !errors.Is(err, bootstrap.ErrNoJobKey) || !errors.Is(err, errUnreachable) {
		t.Fatalf("asking another node without a job key: %v, want errUnreachable and ErrNoJobKey", err)
	}
}
