package nic

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goportals/goportals/internal/bootstrap"
	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/soft"
	"github.com/goportals/goportals/regcache"
)

// Runtime is what network interfaces need from the job launcher: this process's
// rank, the job size, and a key-value exchange with a fence. The launcher's
// bootstrap (cmd/ptlrun, later PMI) satisfies it; tests may supply their own.
type Runtime interface {
	Rank() int
	Size() int
	Put(key string, value []byte) error
	Fence(ctx context.Context) error
	Get(ctx context.Context, rank int, key string) ([]byte, error)
}

// Process is one Portals process: its runtime, its verbs device and its network
// interfaces (at most one per NIOptions combination). Init creates the default
// Process that the package-level functions use; NewProcess builds others (several
// ranks in one test process, an embedding runtime).
type Process struct {
	rt     Runtime
	dev    verbs.Device
	closer func() error
	uid    UID

	mu     sync.Mutex
	nis    [4]*NI
	pid    *pidClaim // the pid every NI of the process has; nil while it has none
	closed bool

	claim  atomic.Pointer[pidClaim] // pid, readable by progress without mu
	jobMap []ProcessID              // the job's physical ids by rank, while the process has a pid and a runtime (under mu)
	jobGen int                      // job map exchanges so far (under mu)
}

// NewProcess returns a Process over rt and dev (nil: the first device of the provider PTL_PROVIDER selects). rt may be
// nil: the process then belongs to no job, and its NIs communicate by physical id,
// or by rank once SetMap gave a logical NI its map (a client with its own launcher
// exchanges PhysID results out of band and calls SetMap). With a runtime, the
// process's first NIInit also exchanges physical ids with the job's ranks, and its
// logical NIs start with the job's map (see NIInit).
func NewProcess(rt Runtime, dev verbs.Device) (*Process, error) {
	if dev == nil {
		var err error
		if dev, err = defaultDevice(); err != nil {
			return nil, opErr("NewProcess", Fail, err)
		}
	}
	openProcs.Add(1)
	return &Process{rt: rt, dev: dev, uid: UID(os.Getuid())}, nil
}

// Close finalizes every NI of the process and releases its runtime if the process
// owns it.
func (p *Process) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return opErr("Close", ArgInvalid, fmt.Errorf("process already closed"))
	}
	p.closed = true
	openProcs.Add(-1)
	nis := p.nis
	p.nis = [4]*NI{}
	claim := p.pid
	p.pid = nil
	p.claim.Store(nil)
	p.jobMap = nil
	p.mu.Unlock()
	for _, ni := range nis {
		if ni != nil {
			ni.shutdown()
		}
	}
	claim.release()
	if p.closer != nil {
		return p.closer()
	}
	return nil
}

// openProcs counts the processes open (Init or NewProcess): a nil handle is
// NoInit while none is, ArgInvalid otherwise.
var openProcs atomic.Int32

// nilHandle is the error of a call made with a nil handle.
func nilHandle(op, what string) error {
	if openProcs.Load() == 0 {
		return opErr(op, NoInit, nil)
	}
	return opErr(op, ArgInvalid, fmt.Errorf("nil %s", what))
}

var defaultProc struct {
	mu   sync.Mutex
	p    *Process
	refs int
}

// Init initializes the library (PtlInit): it joins the job through the launcher's
// bootstrap (a lone process is rank 0 of 1) and opens the soft verbs device. Init
// may be called several times; each call needs a Fini. A bad environment knob
// (PTL_RCACHE_*, PTL_CHECK_PFN; see regcache.CheckEnv) makes it fail (Fail) with an
// error naming the variable and the values it accepts.
func Init() error {
	defaultProc.mu.Lock()
	defer defaultProc.mu.Unlock()
	if defaultProc.p != nil {
		defaultProc.refs++
		return nil
	}
	// The environment knobs are checked once the library starts (and at NIInit):
	// a bad one is an error, never silently ignored.
	if err := regcache.CheckEnv(); err != nil {
		return opErr("PtlInit", Fail, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, release, err := bootstrap.Shared(ctx)
	if err != nil {
		return opErr("PtlInit", Fail, err)
	}
	p, err := NewProcess(b, nil)
	if err != nil {
		release()
		return err
	}
	p.closer = release
	defaultProc.p, defaultProc.refs = p, 1
	return nil
}

// Fini ends one Init (PtlFini); the last one finalizes every NI.
func Fini() {
	defaultProc.mu.Lock()
	defer defaultProc.mu.Unlock()
	if defaultProc.p == nil {
		return
	}
	if defaultProc.refs--; defaultProc.refs == 0 {
		defaultProc.p.Close()
		defaultProc.p = nil
	}
}

func current(op string) (*Process, error) {
	defaultProc.mu.Lock()
	defer defaultProc.mu.Unlock()
	if defaultProc.p == nil {
		return nil, opErr(op, NoInit, nil)
	}
	return defaultProc.p, nil
}

// NIInit initializes a network interface of the default process (PtlNIInit).
func NIInit(iface Interface, opts NIOptions, pid PID, desired *Limits) (*NI, error) {
	p, err := current("PtlNIInit")
	if err != nil {
		return nil, err
	}
	return p.NIInit(iface, opts, pid, desired)
}

// Physical ids. A process has one pid, shared by all its NIs as the reference's
// interface shares its own, from its first NIInit until its last NI is finalized.
// Pids are unique on the node: a pid is claimed in a table of this OS process and,
// on Linux (where the soft provider connects processes of a node), by binding an
// abstract unix socket named after the user and the pid. The kernel refuses a second
// bind of a name, in this process or another, and releases it when the socket is
// closed or its process dies, so a crashed process leaves no stale claim and no
// file behind.

// pidClaim is a pid held by a process, and its rendezvous: the socket that
// claims it node-wide (nil off Linux), where peers send connection requests.
type pidClaim struct {
	pid PID
	ln  *listener
	tcp *tcpRendezvous // the rendezvous for other nodes (nil: none)
	lmu sync.Mutex     // one goroutine polls ln at a time
	wg  sync.WaitGroup
}

// errPIDInUse: the pid is claimed already.
var errPIDInUse = errors.New("pid in use on this node")

var pidTable struct {
	mu     sync.Mutex
	held   map[PID]bool
	cursor uint32 // where the next PID_ANY search starts
}

// claimPID claims pid, or any free pid for PIDAny. It returns errPIDInUse when an
// explicit pid is taken and errNoFreePID when PIDAny finds none free.
func claimPID(pid PID) (*pidClaim, error) {
	pidTable.mu.Lock()
	defer pidTable.mu.Unlock()
	if pidTable.held == nil {
		pidTable.held = map[PID]bool{}
		pidTable.cursor = uint32(os.Getpid()) * 2654435761 % rvPIDSpan
	}
	if pid != PIDAny {
		return claimLocked(pid)
	}
	for i := uint32(0); i < rvPIDSpan; i++ {
		cand := PID((pidTable.cursor + i) % rvPIDSpan)
		c, err := claimLocked(cand)
		if errors.Is(err, errPIDInUse) {
			continue
		}
		if err == nil {
			pidTable.cursor = uint32(cand) + 1
		}
		return c, err
	}
	return nil, errNoFreePID
}

// errNoFreePID: every pid of the node is claimed.
var errNoFreePID = errors.New("no free pid on this node")

// claimLocked claims one pid. Called with pidTable.mu held.
func claimLocked(pid PID) (*pidClaim, error) {
	if pidTable.held[pid] {
		return nil, errPIDInUse
	}
	c := &pidClaim{pid: pid}
	ln, err := listenPID(pid) // node-wide: one owner per pid, whatever the user
	if err != nil {
		return nil, err
	}
	c.ln = ln
	if c.tcp, err = listenTCP(pid); err != nil {
		if ln != nil {
			ln.Close()
		}
		return nil, err
	}
	pidTable.held[pid] = true
	return c, nil
}

// serveFor makes p the process that answers connection requests to the pid: in
// this OS process through the table, from other processes through the socket,
// whose goroutine starts now.
func (c *pidClaim) serveFor(p *Process) {
	pidTable.mu.Lock()
	localProcs[c.pid] = p
	pidTable.mu.Unlock()
	p.claim.Store(c)
	if c.ln != nil && !testNoHelpers.Load() {
		c.wg.Add(1)
		go c.serveWait(p)
	}
	if c.tcp != nil {
		c.tcp.serve(p)
	}
}

// release gives the pid back (nil: nothing).
func (c *pidClaim) release() {
	if c == nil {
		return
	}
	pidTable.mu.Lock()
	defer pidTable.mu.Unlock()
	if c.ln != nil {
		c.ln.Close()
	}
	c.tcp.close()
	delete(pidTable.held, c.pid)
	delete(localProcs, c.pid)
}

// The soft provider is always linked; others (ibv) register themselves when the
// program imports them (package portals/ibverbs).
var _ = soft.Provider{}

// defaultDevice returns the first device of the provider PTL_PROVIDER selects.
func defaultDevice() (verbs.Device, error) {
	p, err := verbs.Choose()
	if err != nil {
		return nil, err
	}
	devs, err := p.Devices()
	if err != nil {
		return nil, err
	}
	if len(devs) == 0 {
		return nil, fmt.Errorf("provider %s has no device: %w", p.Name(), ErrNotSupported)
	}
	return devs[0], nil
}

// NilHandle is the error of a call made with a nil or zero-value handle: NoInit
// while the library is not initialized (as the reference answers), ArgInvalid
// otherwise. The API layer uses it for its own handles.
func NilHandle(op, what string) error { return nilHandle(op, what) }
