package bootstrap

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
)

// TestSlurmPortOutsideEphemeralRange: the port a Slurm step without reserved
// ports meets at lies outside the kernel's range for outgoing connections and
// outside the engine's rendezvous ports (16384-32767).
func TestSlurmPortOutsideEphemeralRange(t *testing.T) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		t.Skipf("no ephemeral port range to check against: %v", err)
	}
	f := strings.Fields(string(b))
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if len(f) != 2 || err1 != nil || err2 != nil {
		t.Fatalf("ip_local_port_range %q", b)
	}
	for i := range 5000 {
		id := fmt.Sprintf("slurm-%d.%d", 1000+i, i%7)
		p := slurmPort(id)
		if p >= lo && p <= hi {
			t.Fatalf("step %s meets at port %d, inside the ephemeral range %d-%d", id, p, lo, hi)
		}
		if p >= 16384 && p < 32768 {
			t.Fatalf("step %s meets at port %d, a pid's rendezvous port", id, p)
		}
		if p < 1024 || p > 65535 {
			t.Fatalf("step %s: port %d", id, p)
		}
	}
}
