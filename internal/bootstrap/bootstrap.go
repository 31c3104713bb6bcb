package bootstrap

import (
	"context"
)

// MaxKeyLen is the longest key, in bytes, that Put and Get accept. Keys are made
// of the bytes 'A'-'Z', 'a'-'z', '0'-'9', '_', '-', '.', ':' only. The limit and
// the set are the common ground of every planned backend: PMI-1 and PMI-2 keys are
// at most 64 characters and may not hold '=', ';', ' ' or '/', so a PMI backend
// can store key K of rank R as the native key "R/E/K" (E: the fence epoch; plus
// a chunk suffix for long values) within its native limit (PMI checks it).
const MaxKeyLen = 40

// MaxValueLen is the longest value, in bytes, that Put accepts. Values are
// arbitrary bytes. Backends whose native values are shorter text (PMI: about
// 1024 characters) encode them and split them across several native keys.
const MaxValueLen = 64 << 10

// Bootstrap is one rank's view of its job: its rank, the job size, a per-rank
// key-value store published at fences, and a barrier. It is the only thing the
// layers above use, so new launchers (PMI-1, PMI-2, environment plus rendezvous)
// plug in as new backends behind Open.
//
// The key-value store follows PMI: each rank Puts keys in its own namespace; a
// Fence, called by every rank, makes all puts made before it visible to all ranks;
// Get(rank, key) reads the value that rank published. A value put again and
// fenced again replaces the old one.
//
// Methods are safe for concurrent use, but collectives (Fence, Barrier) are
// matched by order across ranks: every rank must call the same sequence of
// collectives. A collective whose context ends is withdrawn if it has not yet
// completed; the call then returns the context's error.
type Bootstrap interface {
	// Rank returns this process's rank in [0, Size()).
	Rank() int
	// Size returns the number of ranks in the job.
	Size() int
	// Put records value under key in this rank's namespace, to be published by the
	// next Fence. It does not block. It fails with ErrInvalidKey, ErrValueTooLarge
	// or ErrClosed. The value is copied.
	Put(key string, value []byte) error
	// Fence publishes every Put made before it and waits until every rank has
	// called Fence. It fails with ErrPeerLost if a rank died or left, ErrAborted,
	// ErrLauncherLost, ErrProtocol if ranks disagree on the collective, ErrClosed,
	// or the context's error.
	Fence(ctx context.Context) error
	// Get returns the value that rank published under key at a completed Fence
	// (ErrNotFound if none). The returned slice belongs to the caller.
	Get(ctx context.Context, rank int, key string) ([]byte, error)
	// Barrier waits until every rank has called Barrier. It need not publish puts
	// (use Fence for that). Its errors are Fence's.
	Barrier(ctx context.Context) error
	// Abort asks the launcher to end the whole job with the exit code and message;
	// it returns once the request is delivered (or could not be), and the
	// Bootstrap is closed afterwards. The caller should then exit.
	Abort(code int, msg string) error
	// Close tells the launcher this rank is done with the bootstrap (a clean leave,
	// not a failure) and releases the connection. Collectives that other ranks start
	// afterwards fail with ErrPeerLost; published values stay readable. Close is
	// idempotent.
	Close() error
}

// Open returns the Bootstrap of this process, chosen from the environment: the
// ptlrun backend when PTL_BOOTSTRAP_ADDR is set (see the package documentation
// for its variables); otherwise, if another launcher has started this process
// as one of several ranks, PMI (PMI_FD or PMI_PORT) or a rendezvous of the
// ranks of an Open MPI or Slurm job; otherwise a lone process, rank 0 of 1,
// whose store is in memory. The context bounds connecting to the launcher.
func Open(ctx context.Context) (Bootstrap, error) {
	return openFrom(ctx, lookupEnv)
}

// openFrom is Open with the environment read through lookup (for tests).
func openFrom(ctx context.Context, lookup func(string) (string, bool)) (Bootstrap, error) {
	if _, ok := lookup(EnvAddr); ok {
		cfg, err := configFromEnv(lookup)
		if err != nil {
			return nil, opErr("open", -1, "", err)
		}
		c, err := Dial(ctx, cfg)
		if err != nil {
			return nil, err
		}
		processKey.Store(keyOf(c))
		return c, nil
	}
	if _, _, ok := foreignLauncher(lookup); ok {
		b, err := openLauncher(ctx, lookup)
		if err != nil {
			return nil, opErr("open", -1, "", err)
		}
		// The launcher hands out no secret (see jobkey.go) unless it passed
		// ptlrun's variable to a rendezvous job.
		keys := &keyShare{}
		if k, ok := lookup(EnvJobKey); ok && k != "" {
			keys = knownKey(k)
		} else if err := keys.publish(b); err != nil {
			b.Close()
			return nil, opErr("open", -1, "", err)
		}
		switch x := b.(type) {
		case *PMI:
			x.keys = keys
		case *Rendezvous:
			x.keys = keys
		}
		processKey.Store(keys)
		return b, nil
	}
	processKey.Store(nil)
	return NewLone(), nil
}

// checkKey validates a key against MaxKeyLen and the allowed byte set.
func checkKey(key string) error {
	if key == "" {
		return errDetail(ErrInvalidKey, "empty key")
	}
	if len(key) > MaxKeyLen {
		return errDetail(ErrInvalidKey, "key of %d bytes exceeds MaxKeyLen %d", len(key), MaxKeyLen)
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '_', c == '-', c == '.', c == ':':
		default:
			return errDetail(ErrInvalidKey, "byte %q at %d not allowed", c, i)
		}
	}
	return nil
}

// checkPut validates a Put's key and value.
func checkPut(key string, value []byte) error {
	if err := checkKey(key); err != nil {
		return err
	}
	if len(value) > MaxValueLen {
		return errDetail(ErrValueTooLarge, "value of %d bytes exceeds MaxValueLen %d", len(value), MaxValueLen)
	}
	return nil
}
