// Package bootstrap gives a process its rank, the job size, a key-value exchange and a
// barrier: from the goportals launcher (cmd/ptlrun), and later from PMI-1/PMI-2 or the
// environment. A lone process is rank 0 of 1.
//
// # Use
//
//	b, err := bootstrap.Open(ctx)       // picks the backend from the environment
//	defer b.Close()
//	b.Put("addr", myAddress)            // in this rank's namespace
//	err = b.Fence(ctx)                  // publish all puts; wait for every rank
//	peer, err := b.Get(ctx, r, "addr")  // what rank r published
//
// The Bootstrap interface is modelled on PMI (put / fence / get by rank and key), so a
// PMI backend maps key K of rank R to the native key "R/K". Keys are at most MaxKeyLen
// (40) bytes of [A-Za-z0-9_.:-]; values at most MaxValueLen (64 KiB) of any bytes.
// Errors match the sentinels of errors.go with errors.Is; every blocking call takes a
// context.
//
// # Backends
//
// Open chooses, in order: the ptlrun backend when PTL_BOOTSTRAP_ADDR is set; an error
// matching ErrNotSupported when another launcher (PMI_FD / PMI_PORT, Open MPI, Slurm)
// started the process as one of several ranks, since those backends are not written
// yet; otherwise a lone process (Lone), rank 0 of 1 with an in-memory store.
//
// # The ptlrun backend
//
// Launch (and so cmd/ptlrun) runs a Server on 127.0.0.1 (or a unix socket) and gives
// every rank these environment variables:
//
//	PTL_RANK            the rank, 0 ≤ rank < size
//	PTL_SIZE            the number of ranks
//	PTL_BOOTSTRAP_ADDR  the server, "tcp:127.0.0.1:PORT" or "unix:/path/to/socket"
//	PTL_JOB_KEY         the job's random secret (64 hex digits)
//
// The rank's Client connects once and proves the job key; the server accepts one
// connection per rank. The protocol (wire.go) is length-prefixed frames: put (no
// reply), fence, barrier, get, cancel (withdraws a collective whose context ended),
// abort and finalize (Close). The server notices a rank whose connection drops without
// Close, or whose process fails (Server.RankExited): blocked and later collectives and
// gets of the other ranks then fail with ErrPeerLost instead of hanging. Abort fails
// them with ErrAborted and makes Launch tear the job down.
//
// Launch starts N ranks of a program as child processes (each in its own process group)
// with the server, prefixes their output by rank if asked, and tears the job down
// (SIGTERM to every process group, SIGKILL after a grace period) when a rank fails, a
// rank aborts, the timeout passes or the context ends. Tests and tools such as ptltest
// use Launch or Server directly; cmd/ptlrun is a thin front end.
//
// bootstrap imports nothing of goportals but internal helpers.
package bootstrap
