package netnstest

import (
	"strconv"
	"testing"
)

// TestPickOctetSkipsUsedSubnets: the host side's subnet is never one that an
// interface (a veth a killed run left, another package's test) already has.
func TestPickOctetSkipsUsedSubnets(t *testing.T) {
	listing := "5: gpv1234h    inet 10.202.212.1/24 scope global gpv1234h\\       valid_lft forever\n" +
		"2: eth0    inet 192.0.2.2/24 brd 192.0.2.255 scope global eth0\n" +
		"7: gpv9999h    inet 10.202.1.1/24 scope global gpv9999h\n"
	for i := 0; i < 248; i++ {
		x := pickOctet(listing, func(n int) int {
			if n != 248 {
				t.Fatalf("%d octets to pick from, want 248", n)
			}
			return i
		})
		if x == 212 || x == 1 || x < 1 || x > 250 {
			t.Fatalf("picked %d", x)
		}
	}
	all := ""
	for x := 1; x <= 250; x++ {
		all += " 10.202." + strconv.Itoa(x) + ".1/24"
	}
	if x := pickOctet(all, func(int) int { return 0 }); x != 0 {
		t.Fatalf("picked %d with every subnet taken, want 0", x)
	}
}
