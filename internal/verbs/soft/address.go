package soft

import (
	"encoding/binary"

	"github.com/goportals/goportals/internal/verbs"
)

// address is what a peer needs to connect: the process, the descriptors of its
// segment and of the queue pair's ring file, and identity checks.
type address struct {
	pid    uint32
	segFd  int32
	ringFd int32
	qpn    uint32
	pd     uint32
	nonce  uint64
	boot   [16]byte
	// The TCP path: the network namespace (a node is a kernel and a network
	// namespace) and the context's listener.
	netns   uint64
	tcpIP   [16]byte
	tcpPort uint16
}

const (
	addrMagic = 0x47505346 // "GPSF"
	addrLen   = 4 + 4 + 4 + 4 + 4 + 4 + 8 + 16 + 8 + 16 + 8
)

func (a address) encode() verbs.Address {
	b := make([]byte, addrLen)
	binary.LittleEndian.PutUint32(b[0:], addrMagic)
	binary.LittleEndian.PutUint32(b[4:], a.pid)
	binary.LittleEndian.PutUint32(b[8:], uint32(a.segFd))
	binary.LittleEndian.PutUint32(b[12:], uint32(a.ringFd))
	binary.LittleEndian.PutUint32(b[16:], a.qpn)
	binary.LittleEndian.PutUint32(b[20:], a.pd)
	binary.LittleEndian.PutUint64(b[24:], a.nonce)
	copy(b[32:], a.boot[:])
	binary.LittleEndian.PutUint64(b[48:], a.netns)
	copy(b[56:], a.tcpIP[:])
	binary.LittleEndian.PutUint16(b[72:], a.tcpPort)
	return b
}

func decodeAddress(b verbs.Address) (address, bool) {
	if len(b) != addrLen || binary.LittleEndian.Uint32(b) != addrMagic {
		return address{}, false
	}
	a := address{
		pid:    binary.LittleEndian.Uint32(b[4:]),
		segFd:  int32(binary.LittleEndian.Uint32(b[8:])),
		ringFd: int32(binary.LittleEndian.Uint32(b[12:])),
		qpn:    binary.LittleEndian.Uint32(b[16:]),
		pd:     binary.LittleEndian.Uint32(b[20:]),
		nonce:  binary.LittleEndian.Uint64(b[24:]),
	}
	copy(a.boot[:], b[32:48])
	a.netns = binary.LittleEndian.Uint64(b[48:])
	copy(a.tcpIP[:], b[56:72])
	a.tcpPort = binary.LittleEndian.Uint16(b[72:])
	return a, a.pid != 0 && a.segFd >= 0 && a.ringFd >= 0
}
