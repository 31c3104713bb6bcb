package loopback

import (
	"crypto/rand"
	"sync"

	"github.com/goportals/goportals/internal/verbs"
)

// wire is the process-wide lock that stands for the network: every change of provider
// state (objects, queues, connections) and every data movement between regions happens
// while holding it, so concurrent posts from both ends of a connection are serialised the
// way a link serialises packets. Completion queues have their own lock, always taken
// after wire, so that Poll does not wait for transfers.
var wire struct {
	mu  sync.Mutex
	qps map[qpID]*qp // queue pairs by address, for Connect
}

// qpID is the random identifier a queue pair's Address carries.
type qpID [16]byte

// addrMagic starts every loopback Address so that an address of another provider is
// rejected with a clear error.
const addrMagic = "LBQ1"

// addrLen is the length of an encoded Address.
const addrLen = len(addrMagic) + len(qpID{})

// newQPID returns a fresh random identifier. Called with wire.mu held.
func newQPID() qpID {
	for {
		var id qpID
		_, _ = rand.Read(id[:]) // crypto/rand.Read never fails on Linux (Go ≥ 1.24)
		if _, dup := wire.qps[id]; !dup {
			return id
		}
	}
}

// encodeAddress returns the Address of id.
func encodeAddress(id qpID) verbs.Address {
	a := make(verbs.Address, 0, addrLen)
	a = append(a, addrMagic...)
	return append(a, id[:]...)
}

// decodeAddress parses an Address made by encodeAddress.
func decodeAddress(a verbs.Address) (qpID, error) {
	var id qpID
	if len(a) != addrLen || string(a[:len(addrMagic)]) != addrMagic {
		return id, verbs.Errorf("connect", verbs.ErrInvalidArgument, errNotLoopbackAddress)
	}
	copy(id[:], a[len(addrMagic):])
	return id, nil
}

// registerQP makes q reachable by its address. Called with wire.mu held.
func registerQP(q *qp) {
	if wire.qps == nil {
		wire.qps = make(map[qpID]*qp)
	}
	q.id = newQPID()
	wire.qps[q.id] = q
}
