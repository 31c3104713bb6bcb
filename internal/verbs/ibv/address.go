package ibv

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/goportals/goportals/internal/verbs"
)

// addrLen is the length of an encoded queue pair address.
const addrLen = 30

// addrVersion is the first byte of every address this package encodes.
const addrVersion = 1

// address is what a peer needs to connect to a queue pair.
type address struct {
	Port   uint8
	MTU    uint8 // enum ibv_mtu: 1 (256 B) to 5 (4096 B)
	Global bool  // the peer must be reached with a GRH (RoCE, or another subnet)
	LID    uint16
	QPN    uint32 // 24 bits
	PSN    uint32 // 24 bits
	GID    [16]byte
}

// encode returns the wire form: version, port, MTU, flags, then LID, QPN and PSN
// big-endian, then the GID.
func (a address) encode() verbs.Address {
	b := make([]byte, addrLen)
	b[0] = addrVersion
	b[1] = a.Port
	b[2] = a.MTU
	if a.Global {
		b[3] = 1
	}
	binary.BigEndian.PutUint16(b[4:], a.LID)
	binary.BigEndian.PutUint32(b[6:], a.QPN)
	binary.BigEndian.PutUint32(b[10:], a.PSN)
	copy(b[14:], a.GID[:])
	return b
}

var errBadAddress = errors.New("not an ibv queue pair address")

// decodeAddress parses an address from a peer; anything malformed is an error matching
// verbs.ErrInvalidArgument.
func decodeAddress(b verbs.Address) (address, error) {
	bad := func(why string) (address, error) {
		return address{}, verbs.Errorf("ibv: decode address", verbs.ErrInvalidArgument, fmt.Errorf("%w: %s", errBadAddress, why))
	}
	if len(b) != addrLen {
		return bad(fmt.Sprintf("%d bytes, want %d", len(b), addrLen))
	}
	if b[0] != addrVersion {
		return bad(fmt.Sprintf("version %d, want %d", b[0], addrVersion))
	}
	a := address{Port: b[1], MTU: b[2], Global: b[3]&1 != 0,
		LID: binary.BigEndian.Uint16(b[4:]), QPN: binary.BigEndian.Uint32(b[6:]), PSN: binary.BigEndian.Uint32(b[10:])}
	copy(a.GID[:], b[14:])
	switch {
	case b[3]&^1 != 0:
		return bad("unknown flags")
	case a.Port == 0:
		return bad("port 0")
	case a.MTU < 1 || a.MTU > 5:
		return bad(fmt.Sprintf("MTU code %d", a.MTU))
	case a.QPN >= 1<<24 || a.QPN == 0:
		return bad(fmt.Sprintf("QPN %#x", a.QPN))
	case a.PSN >= 1<<24:
		return bad(fmt.Sprintf("PSN %#x", a.PSN))
	case !a.Global && a.LID == 0:
		return bad("neither a LID nor a GID route")
	}
	return a, nil
}
