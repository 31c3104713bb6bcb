package netnstest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// Pair is two network namespaces joined by a veth pair.
type Pair struct {
	// Names are the namespaces' names (as `ip netns` knows them).
	Names [2]string
	// Addrs are the IPv4 addresses of the two ends.
	Addrs [2]string
}

func run(args ...string) error {
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Setup creates the pair for the test and removes it when the test ends. It
// skips the test, saying why, where namespaces cannot be made.
func Setup(t testing.TB) *Pair {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("netnstest: network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("netnstest: the ip tool (iproute2) is not installed")
	}
	tag := fmt.Sprintf("%04x", rand.IntN(1<<16))
	p := &Pair{Names: [2]string{"gp" + tag + "a", "gp" + tag + "b"},
		Addrs: [2]string{"10.201.0.1", "10.201.0.2"}}
	va, vb := "gpv"+tag+"a", "gpv"+tag+"b"
	steps := [][]string{
		{"ip", "netns", "add", p.Names[0]},
		{"ip", "netns", "add", p.Names[1]},
		{"ip", "link", "add", va, "type", "veth", "peer", "name", vb},
		{"ip", "link", "set", va, "netns", p.Names[0]},
		{"ip", "link", "set", vb, "netns", p.Names[1]},
		{"ip", "-n", p.Names[0], "addr", "add", p.Addrs[0] + "/24", "dev", va},
		{"ip", "-n", p.Names[1], "addr", "add", p.Addrs[1] + "/24", "dev", vb},
		{"ip", "-n", p.Names[0], "link", "set", va, "up"},
		{"ip", "-n", p.Names[1], "link", "set", vb, "up"},
		{"ip", "-n", p.Names[0], "link", "set", "lo", "up"},
		{"ip", "-n", p.Names[1], "link", "set", "lo", "up"},
	}
	t.Cleanup(func() {
		run("ip", "netns", "del", p.Names[0])
		run("ip", "netns", "del", p.Names[1])
	})
	for i, s := range steps {
		if err := run(s...); err != nil {
			if i == 0 {
				t.Skipf("netnstest: cannot create a network namespace here: %v", err)
			}
			t.Fatalf("netnstest: %v", err)
		}
	}
	return p
}

// Host is one network namespace joined to the test's own by a veth pair, with a
// default route through it: a process started in it is on another node than the
// test process, and each can reach the other.
type Host struct {
	// Name is the namespace's name.
	Name string
	// Addr is the namespace's address; HostAddr the test side's.
	Addr, HostAddr string
}

// SetupHost creates the namespace for the test and removes it when the test ends;
// it skips the test, saying why, where that is impossible.
func SetupHost(t testing.TB) *Host {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("netnstest: network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("netnstest: the ip tool (iproute2) is not installed")
	}
	// Test processes of several packages make hosts at once (go test runs
	// packages in parallel), and a killed run leaves its veth behind: the subnet
	// is chosen among those no interface of ours has yet, under a lock that
	// every test process takes until its addresses are in place.
	unlock := lockSetup(t)
	defer unlock()
	tag := fmt.Sprintf("%04x", rand.IntN(1<<16))
	x := freeOctet(t)
	if x == 0 {
		t.Fatal("netnstest: every 10.202.x.0/24 subnet is taken (namespaces left by killed runs? `ip -o -4 addr show`)")
	}
	h := &Host{Name: "gp" + tag + "h", Addr: "10.202." + fmt.Sprint(x) + ".2"}
	h.HostAddr = strings.TrimSuffix(h.Addr, ".2") + ".1"
	vh, vn := "gpv"+tag+"h", "gpv"+tag+"n"
	steps := [][]string{
		{"ip", "netns", "add", h.Name},
		{"ip", "link", "add", vh, "type", "veth", "peer", "name", vn},
		{"ip", "link", "set", vn, "netns", h.Name},
		{"ip", "addr", "add", h.HostAddr + "/24", "dev", vh},
		{"ip", "link", "set", vh, "up"},
		{"ip", "-n", h.Name, "addr", "add", h.Addr + "/24", "dev", vn},
		{"ip", "-n", h.Name, "link", "set", vn, "up"},
		{"ip", "-n", h.Name, "link", "set", "lo", "up"},
		{"ip", "-n", h.Name, "route", "add", "default", "via", h.HostAddr},
	}
	t.Cleanup(func() {
		run("ip", "link", "del", vh)
		run("ip", "netns", "del", h.Name)
	})
	for i, s := range steps {
		if err := run(s...); err != nil {
			if i == 0 {
				t.Skipf("netnstest: cannot create a network namespace here: %v", err)
			}
			t.Fatalf("netnstest: %v", err)
		}
	}
	return h
}

// Wrap returns argv run inside the namespace.
func (h *Host) Wrap(argv ...string) []string {
	return append([]string{"ip", "netns", "exec", h.Name}, argv...)
}

// Wrap returns argv run inside namespace i.
func (p *Pair) Wrap(i int, argv ...string) []string {
	return append([]string{"ip", "netns", "exec", p.Names[i]}, argv...)
}

// WrapByRank returns a command that runs argv in namespace PTL_RANK mod 2, for a
// launcher that starts every rank with the same command line.
func (p *Pair) WrapByRank(argv ...string) []string {
	script := `ns="$1"; shift; ns2="$1"; shift; if [ $(( ${PTL_RANK:-0} % 2 )) -eq 1 ]; then ns="$ns2"; fi; exec ip netns exec "$ns" "$@"`
	return append([]string{"sh", "-c", script, "netnstest", p.Names[0], p.Names[1]}, argv...)
}

// lockSetup takes the machine-wide lock of namespace set-ups (a file lock in the
// temporary directory) and returns its release.
func lockSetup(t testing.TB) func() {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "goportals-netnstest.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatalf("netnstest: %v", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		t.Fatalf("netnstest: lock %s: %v", f.Name(), err)
	}
	return func() { f.Close() } // (closing releases the lock)
}

// freeOctet returns a third octet x in [1, 250] such that no interface here has
// an address in 10.202.x.0/24, picked at random among those.
func freeOctet(t testing.TB) int {
	t.Helper()
	out, err := exec.Command("ip", "-o", "-4", "addr", "show").Output()
	if err != nil {
		t.Fatalf("netnstest: ip addr show: %v", err)
	}
	return pickOctet(string(out), rand.IntN)
}

// pickOctet chooses, with pick (rand.IntN), among the octets in [1, 250] that no
// "10.202.x." address in the ip -o -4 addr listing uses; 0 when all are taken.
func pickOctet(listing string, pick func(int) int) int {
	used := map[int]bool{}
	for _, f := range strings.Fields(listing) {
		var x int
		if _, err := fmt.Sscanf(f, "10.202.%d.", &x); err == nil {
			used[x] = true
		}
	}
	var free []int
	for x := 1; x <= 250; x++ {
		if !used[x] {
			free = append(free, x)
		}
	}
	if len(free) == 0 {
		return 0
	}
	return free[pick(len(free))]
}
