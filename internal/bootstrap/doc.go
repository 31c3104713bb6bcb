// Package bootstrap gives a process its rank, the job size, a key-value exchange and a
// barrier: from the goportals launcher (cmd/ptlrun), from a PMI launcher (MPICH hydra,
// Slurm), or from the environment of Slurm or Open MPI. A lone process is rank 0 of 1.
//
// # Use
//
//	b, err := bootstrap.Open(ctx)       // picks the backend from the environment
//	defer b.Close()
//	b.Put("addr", myAddress)            // in this rank's namespace
//	err = b.Fence(ctx)                  // publish all puts; wait for every rank
//	peer, err := b.Get(ctx, r, "addr")  // what rank r published
//
// The Bootstrap interface is modelled on PMI (put / fence / get by rank and key), so the
// PMI backend maps key K of rank R, put before the E-th fence, to the native key "R/E/K". Keys are at most MaxKeyLen
// (40) bytes of [A-Za-z0-9_.:-]; values at most MaxValueLen (64 KiB) of any bytes.
// Errors match the sentinels of errors.go with errors.Is; every blocking call takes a
// context.
//
// # Backends
//
// Open chooses, in order:
//
//   - ptlrun, when PTL_BOOTSTRAP_ADDR is set (see below);
//   - PMI (type PMI) when PMI_FD or PMI_PORT is set and the job has more than one rank:
//     PMI-1 over PMI_FD (hydra's mpiexec), PMI-1 over PMI_PORT and PMI_ID (mpiexec
//     -pmi-port), PMI-2 over PMI_FD when the launcher set PMI_JOBID (Slurm's srun
//     --mpi=pmi2) or PTL_PMI_VERSION=2. Every native key and value is checked
//     against the limits the launcher reports before it is sent (hydra ends the
//     job on a malformed request), and values are base64 text, so any bytes travel;
//   - a rendezvous (type Rendezvous) when Open MPI (OMPI_COMM_WORLD_RANK/SIZE) or
//     Slurm (SLURM_PROCID, SLURM_NTASKS) started several ranks without PMI: rank 0
//     serves the ptlrun protocol in-process, on a local socket named after the job
//     when all ranks share a node, else over TCP (PTL_RENDEZVOUS, or the first node
//     and reserved port of the Slurm step);
//   - otherwise a lone process (Lone), rank 0 of 1 with an in-memory store.
//
// # The job key
//
// JobKey gives the secret of the job the process joined through Open, which the
// fabric proves and checks (ProveKey, an HMAC over both sides' challenges: the key
// never travels) when processes connect between nodes: ptlrun's PTL_JOB_KEY, or
// under PMI and a rendezvous without it a key that rank 0 draws at Open and the
// job's first Fence publishes (unknown until then). A process that joined no job
// takes PTL_JOB_KEY from its environment; without one it stays on its node
// (ErrNoJobKey).
//
// NodeAddr (and ResolveNodeAddr) give the address that names this node to the
// others, following PTL_NODE_ADDR or PTL_IFACE.
//
// A launcher that misbehaves (closes the connection, answers out of step, sends
// malformed or oversized replies) gives typed errors, never a panic.
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
