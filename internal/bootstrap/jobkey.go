package bootstrap

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/goportals/goportals/internal/envknob"
)

// The job key. The processes of one job share a secret that the fabric checks
// when two of them connect (the soft provider's TCP streams and the engine's
// rendezvous between nodes): a process of another job, or of none, is refused.
// ptlrun draws a random key per job and gives it to every rank, through its
// agents too (PTL_JOB_KEY); a Client knows it from the start. A PMI launcher or
// a rendezvous launcher without PTL_JOB_KEY hands out no secret: there rank 0
// draws one at Open and puts it under jobKeyName in its namespace; the first
// Fence publishes it, and every rank reads it then. Until that Fence the key is
// not known, and JobKey says so (a process of a job has no business connecting
// before it fenced: it learns its peers' addresses by a fence).

// jobKeyName is the store key under which rank 0 publishes a drawn job key.
const jobKeyName = "ptl.jobkey"

// newJobKey draws a random key: 64 hex digits, as ptlrun's.
func newJobKey() string {
	var b [32]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// keyShare is the job key of a backend that learns it through its store.
type keyShare struct {
	mu    sync.Mutex
	key   []byte
	known bool
}

// knownKey is a keyShare that holds key from the start.
func knownKey(key string) *keyShare { return &keyShare{key: []byte(key), known: true} }

// publish draws the key (rank 0) and puts it, to be published by the next Fence.
func (k *keyShare) publish(b Bootstrap) error {
	if b.Rank() != 0 {
		return nil
	}
	return b.Put(jobKeyName, []byte(newJobKey()))
}

// learn reads rank 0's key once a Fence has published it; a failure leaves the
// key unknown, to be read after the next Fence.
func (k *keyShare) learn(ctx context.Context, b Bootstrap) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.known {
		return nil
	}
	v, err := b.Get(ctx, 0, jobKeyName)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		return err
	}
	k.key, k.known = v, true
	return nil
}

// get returns the key and whether it is known.
func (k *keyShare) get() ([]byte, bool) {
	if k == nil {
		return nil, true
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.key, k.known
}

// processKey is the job key of the bootstrap Open returned last.
var processKey atomic.Pointer[keyShare]

// ErrNoJobKey says that a connection between nodes was refused, or not tried,
// because this process has no job key. A process that joined no job through this
// package (a lone process, or a C program that runs its own PMI, as SHMEM
// libraries do) reaches only processes of its own node unless PTL_JOB_KEY holds
// the same secret in every process of the job (export it to every rank, e.g.
// mpiexec -genv PTL_JOB_KEY <secret>, or srun --export=ALL,PTL_JOB_KEY=<secret>).
var ErrNoJobKey = errors.New("no job key: connections between nodes need the same " + EnvJobKey +
	" in every process of the job (a program with its own PMI exports it to every rank, e.g. mpiexec -genv " + EnvJobKey + " <secret>)")

// JobKey returns the secret of the job this process joined through Open (or
// Shared) and whether it is known. A process that joined no job takes
// PTL_JOB_KEY from its environment; without it the process has none (nil,
// true): it then neither offers nor accepts connections between nodes
// (ErrNoJobKey). Under a launcher that hands out no secret the key is known
// from the job's first Fence on (before it: nil, false, and a connection can be
// neither offered nor accepted).
func JobKey() ([]byte, bool) {
	k := processKey.Load()
	if k == nil {
		if v := envknob.Get(envknob.JobKey); v != "" {
			return []byte(v), true
		}
		return nil, true
	}
	key, known := k.get()
	return append([]byte(nil), key...), known
}

// keyOf returns the key share of a backend.
func keyOf(b Bootstrap) *keyShare {
	switch x := b.(type) {
	case *Client:
		return knownKey(x.cfg.JobKey)
	case *Rendezvous:
		return x.keys
	case *PMI:
		return x.keys
	}
	return nil
}

// ProveKey returns the HMAC-SHA256 under key of label and parts, each preceded
// by its length: two processes prove that they hold the same job key, without
// sending it, by each answering the other's random challenge (Challenge) with a
// proof under its own label.
func ProveKey(key []byte, label string, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, key)
	var n [4]byte
	for _, p := range append([][]byte{[]byte(label)}, parts...) {
		binary.LittleEndian.PutUint32(n[:], uint32(len(p)))
		m.Write(n[:])
		m.Write(p)
	}
	return m.Sum(nil)
}

// ChallengeLen is the length of a Challenge and of a ProveKey proof.
const ChallengeLen = 32

// Challenge draws a random challenge of ChallengeLen bytes.
func Challenge() []byte {
	b := make([]byte, ChallengeLen)
	rand.Read(b)
	return b
}
