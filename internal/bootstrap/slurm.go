package bootstrap

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goportals/goportals/internal/envknob"
)

// EnvRendezvous overrides where the ranks of a Slurm or Open MPI job started
// without PMI meet: "tcp:HOST:PORT" (or "HOST:PORT"), an address of the host of
// rank 0, which listens there. Without it a job on one node meets on a local
// socket named after the job, and a Slurm job on several nodes at the first
// node of its step, on the first port Slurm reserved for the step
// (SLURM_STEP_RESV_PORTS, from MpiParams=ports=...) or else a port derived from
// the job and step ids.
const EnvRendezvous = string(envknob.Rendezvous)

// rendezvousTimeout bounds the wait for rank 0's server when the caller's
// context has no deadline.
const rendezvousTimeout = 2 * time.Minute

// rendezvousLinger bounds how long rank 0's Close keeps serving the other
// ranks until they have all left.
const rendezvousLinger = time.Minute

// rendezvous says where the ranks of an environment-started job meet.
type rendezvous struct {
	launcher   string // "Slurm" or "Open MPI", for messages
	rank, size int
	network    string // "tcp" or "unix"
	listen     string // address rank 0 listens on
	dial       string // address the ranks dial
	key        string // job key the ranks present
}

// slurmRendezvous reads a Slurm step's environment (srun without --mpi=pmi2).
func slurmRendezvous(lookup func(string) (string, bool)) (rendezvous, error) {
	rv := rendezvous{launcher: "Slurm"}
	var err error
	if rv.rank, err = lookupInt(lookup, "SLURM_PROCID"); err != nil {
		return rv, err
	}
	sizeVar := "SLURM_STEP_NUM_TASKS"
	if _, ok := lookup(sizeVar); !ok {
		sizeVar = "SLURM_NTASKS"
	}
	if rv.size, err = lookupInt(lookup, sizeVar); err != nil {
		return rv, err
	}
	job, ok := lookup("SLURM_JOB_ID")
	if !ok || job == "" {
		return rv, errDetail(ErrBadEnv, "SLURM_PROCID is set but SLURM_JOB_ID is not")
	}
	step, ok := lookup("SLURM_STEP_ID")
	if !ok {
		step = "0"
	}
	id := "slurm-" + job + "." + step
	rv.key = jobKey(lookup, id)
	if explicit, ok, err := explicitRendezvous(lookup); ok || err != nil {
		rv.network, rv.listen, rv.dial = "tcp", explicit, explicit
		return rv, err
	}
	nodesVar := "SLURM_STEP_NUM_NODES"
	if _, ok := lookup(nodesVar); !ok {
		nodesVar = "SLURM_NNODES"
	}
	nodes, err := lookupInt(lookup, nodesVar)
	if err != nil {
		return rv, err
	}
	if nodes == 1 {
		if network, addr, ok := localRendezvous(id); ok {
			rv.network, rv.listen, rv.dial = network, addr, addr
			return rv, nil
		}
	}
	list, ok := lookup("SLURM_STEP_NODELIST")
	if !ok {
		list, ok = lookup("SLURM_JOB_NODELIST")
	}
	if !ok {
		return rv, errDetail(ErrBadEnv, "neither SLURM_STEP_NODELIST nor SLURM_JOB_NODELIST is set; set %s", EnvRendezvous)
	}
	host, err := firstHost(list)
	if err != nil {
		return rv, err
	}
	port := 0
	if ports, ok := lookup("SLURM_STEP_RESV_PORTS"); ok && ports != "" {
		first, _, _ := strings.Cut(strings.Split(ports, ",")[0], "-")
		if port, err = strconv.Atoi(first); err != nil || port < 1 || port > 65535 {
			return rv, errDetail(ErrBadEnv, "SLURM_STEP_RESV_PORTS=%q does not start with a port", ports)
		}
	} else {
		port = slurmPort(id)
	}
	rv.network = "tcp"
	rv.listen = net.JoinHostPort(host, strconv.Itoa(port))
	rv.dial = rv.listen
	return rv, nil
}

// ompiRendezvous reads an Open MPI job's environment (mpirun of a program
// that does not speak PMIx).
func ompiRendezvous(lookup func(string) (string, bool)) (rendezvous, error) {
	rv := rendezvous{launcher: "Open MPI"}
	var err error
	if rv.rank, err = lookupInt(lookup, "OMPI_COMM_WORLD_RANK"); err != nil {
		return rv, err
	}
	if rv.size, err = lookupInt(lookup, "OMPI_COMM_WORLD_SIZE"); err != nil {
		return rv, err
	}
	job := ""
	for _, name := range []string{"OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "OMPI_MCA_orte_ess_jobid"} {
		if v, ok := lookup(name); ok && v != "" {
			job = v
			break
		}
	}
	id := "ompi-" + job
	rv.key = jobKey(lookup, id)
	if explicit, ok, err := explicitRendezvous(lookup); ok || err != nil {
		rv.network, rv.listen, rv.dial = "tcp", explicit, explicit
		return rv, err
	}
	local, err := lookupInt(lookup, "OMPI_COMM_WORLD_LOCAL_SIZE")
	if err != nil || local != rv.size {
		return rv, errDetail(ErrBadEnv, "an Open MPI job on several nodes needs %s=tcp:HOST:PORT (HOST: the node of rank 0)", EnvRendezvous)
	}
	if job == "" {
		return rv, errDetail(ErrBadEnv, "Open MPI gave no job id (OMPI_MCA_ess_base_jobid, PMIX_NAMESPACE); set %s", EnvRendezvous)
	}
	network, addr, ok := localRendezvous(id)
	if !ok {
		return rv, errDetail(ErrBadEnv, "no local rendezvous on this system; set %s", EnvRendezvous)
	}
	rv.network, rv.listen, rv.dial = network, addr, addr
	return rv, nil
}

// explicitRendezvous reads EnvRendezvous.
func explicitRendezvous(lookup func(string) (string, bool)) (string, bool, error) {
	v, ok := lookup(EnvRendezvous)
	if !ok || v == "" {
		return "", false, nil
	}
	addr := strings.TrimPrefix(v, "tcp:")
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return "", true, errDetail(ErrBadEnv, "%s=%q is not tcp:HOST:PORT", EnvRendezvous, v)
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return "", true, errDetail(ErrBadEnv, "%s=%q has no valid port", EnvRendezvous, v)
	}
	return addr, true, nil
}

// jobKey returns PTL_JOB_KEY when the launcher passed one, else a key derived
// from the job id and the user: it keeps jobs apart but is no secret.
func jobKey(lookup func(string) (string, bool), id string) string {
	if k, ok := lookup(EnvJobKey); ok && k != "" {
		return k
	}
	sum := sha256.Sum256([]byte("goportals rendezvous\x00" + id + "\x00" + strconv.Itoa(os.Getuid())))
	return hex.EncodeToString(sum[:])
}

// firstHost returns the first host name of a Slurm host list such as
// "node[01-04,07],login1" (node01) or "r[1-2]-n[3-4]" (r1-n3).
func firstHost(list string) (string, error) {
	bad := errDetail(ErrBadEnv, "Slurm node list %q has no first host", list)
	var b strings.Builder
	for i := 0; i < len(list); i++ {
		c := list[i]
		switch c {
		case ',':
			i = len(list) // end of the first host
			continue
		case '[':
			end := strings.IndexByte(list[i:], ']')
			if end < 0 || b.Len() == 0 {
				return "", bad
			}
			first, _, _ := strings.Cut(list[i+1:i+end], ",")
			first, _, _ = strings.Cut(first, "-")
			if first == "" {
				return "", bad
			}
			b.WriteString(first)
			i += end
			continue
		case ']':
			return "", bad
		}
		b.WriteByte(c)
	}
	if b.Len() == 0 {
		return "", bad
	}
	return b.String(), nil
}

// Rendezvous is the Bootstrap of a rank of a job that its launcher (Slurm's
// srun without PMI, Open MPI's mpirun) described only through environment
// variables. Rank 0 runs the ptlrun Server in-process on the rendezvous
// address; every rank, rank 0 included, is its Client. Rank 0's Close and
// Abort keep serving until the other ranks have left (at most a minute).
type Rendezvous struct {
	*Client
	keys  *keyShare // the job key, learned at the first Fence unless given
	srv   *Server
	done  chan struct{} // closed when srv.Serve returned
	close sync.Once
}

// openRendezvous starts (rank 0) or reaches (other ranks) the rendezvous.
func openRendezvous(ctx context.Context, rv rendezvous) (*Rendezvous, error) {
	if rv.size < 1 || rv.rank < 0 || rv.rank >= rv.size {
		return nil, errDetail(ErrBadEnv, "%s gave rank %d of a job of %d", rv.launcher, rv.rank, rv.size)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, rendezvousTimeout)
		defer cancel()
	}
	r := &Rendezvous{}
	cfg := ClientConfig{Addr: rv.network + ":" + rv.dial, Rank: rv.rank, Size: rv.size, JobKey: rv.key}
	if rv.rank == 0 {
		var lc net.ListenConfig
		ln, err := lc.Listen(ctx, rv.network, rv.listen)
		if err != nil {
			return nil, errDetail(ErrBadEnv, "rank 0 cannot listen on the rendezvous %s:%s (%v); set %s", rv.network, rv.listen, err, EnvRendezvous)
		}
		srv, err := NewServer(ServerConfig{Size: rv.size, JobKey: rv.key})
		if err != nil {
			ln.Close()
			return nil, err
		}
		// Serve on the rendezvous listener instead of the server's own.
		srv.ln.Close()
		srv.ln, srv.addr = ln, cfg.Addr
		r.srv, r.done = srv, make(chan struct{})
		go func() {
			defer close(r.done)
			srv.Serve(context.Background())
		}()
	}
	for {
		c, err := Dial(ctx, cfg)
		if err == nil {
			r.Client = c
			return r, nil
		}
		if !errors.Is(err, ErrLauncherLost) || ctx.Err() != nil {
			r.stopServer()
			if ctx.Err() != nil {
				err = fmt.Errorf("%w: rank 0 of the %s job did not answer at %s: %w", ErrLauncherLost, rv.launcher, cfg.Addr, ctx.Err())
			}
			return nil, err
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stopServer waits (rank 0) until every rank has left or rendezvousLinger
// passed, then stops the server.
func (r *Rendezvous) stopServer() {
	if r.srv == nil {
		return
	}
	r.close.Do(func() {
		deadline := time.Now().Add(rendezvousLinger)
		for len(r.srv.Departed()) < r.srv.Size() && time.Now().Before(deadline) {
			select {
			case <-r.srv.Failed():
				deadline = time.Now() // aborted or lost: the others are told
			case <-time.After(20 * time.Millisecond):
			}
		}
		r.srv.Close()
		<-r.done
	})
}

// Fence publishes the puts made before it and waits for every rank (see
// Bootstrap); the first one also makes the job key known (see JobKey).
func (r *Rendezvous) Fence(ctx context.Context) error {
	if err := r.Client.Fence(ctx); err != nil {
		return err
	}
	if r.keys != nil {
		return r.keys.learn(ctx, r)
	}
	return nil
}

// Close leaves the job; rank 0 then serves until the others have left.
func (r *Rendezvous) Close() error {
	err := r.Client.Close()
	r.stopServer()
	return err
}

// Abort asks every rank to give up; rank 0 then serves until the others have
// heard it.
func (r *Rendezvous) Abort(code int, msg string) error {
	err := r.Client.Abort(code, msg)
	r.stopServer()
	return err
}

// Without reserved ports (SLURM_STEP_RESV_PORTS) a Slurm step's rank 0 listens
// at a port drawn from the step's id in [slurmPortBase, slurmPortBase+slurmPortSpan):
// 10000-16383, below the engine's rendezvous ports (16384-32767) and below
// Linux's default range of ports for outgoing connections (32768-60999), where
// any connection of any process could hold it.
const (
	slurmPortBase = 10000
	slurmPortSpan = 6384
)

// slurmPort is the rendezvous port of the Slurm step id: every rank computes the
// same from the environment.
func slurmPort(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return slurmPortBase + int(h.Sum32()%slurmPortSpan)
}
