package ibv

import (
	"errors"
	"testing"

	"github.com/goportals/goportals/internal/verbs"
)

func TestAddressRoundTrip(t *testing.T) {
	for _, a := range []address{
		{Port: 1, MTU: 5, LID: 0x12, QPN: 0x1234, PSN: 0xabcdef},
		{Port: 2, MTU: 3, Global: true, QPN: 0xffffff, PSN: 0, GID: [16]byte{0xfe, 0x80, 15: 9}},
	} {
		got, err := decodeAddress(a.encode())
		if err != nil || got != a {
			t.Errorf("round trip of %+v = %+v, %v", a, got, err)
		}
	}
}

func TestAddressRejectsGarbage(t *testing.T) {
	good := address{Port: 1, MTU: 5, LID: 3, QPN: 7, PSN: 9}.encode()
	mut := func(i int, v byte) verbs.Address {
		b := append(verbs.Address(nil), good...)
		b[i] = v
		return b
	}
	cases := map[string]verbs.Address{
		"empty":       nil,
		"text":        verbs.Address("not an address"),
		"short":       good[:addrLen-1],
		"long":        append(append(verbs.Address(nil), good...), 0),
		"version":     mut(0, 2),
		"port 0":      mut(1, 0),
		"mtu 0":       mut(2, 0),
		"mtu 6":       mut(2, 6),
		"flags":       mut(3, 2),
		"qpn 0":       address{Port: 1, MTU: 5, LID: 3, QPN: 0, PSN: 9}.encode(),
		"qpn 25 bits": mut(6, 1),
		"psn 25 bits": mut(10, 1),
		"no route":    address{Port: 1, MTU: 5, QPN: 7}.encode(),
	}
	for name, b := range cases {
		_, err := decodeAddress(b)
		var oe *verbs.OpError
		if !errors.Is(err, verbs.ErrInvalidArgument) || !errors.As(err, &oe) {
			t.Errorf("%s: decode = %v, want an *OpError matching ErrInvalidArgument", name, err)
		}
	}
}

func FuzzDecodeAddress(f *testing.F) {
	f.Add([]byte(address{Port: 1, MTU: 5, LID: 3, QPN: 7, PSN: 9}.encode()))
	f.Add([]byte("x"))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := decodeAddress(b)
		if err != nil {
			if !errors.Is(err, verbs.ErrInvalidArgument) {
				t.Fatalf("error %v does not match ErrInvalidArgument", err)
			}
			return
		}
		if back := a.encode(); string(back) != string(b) {
			t.Fatalf("accepted %x re-encodes as %x", b, back)
		}
	})
}
