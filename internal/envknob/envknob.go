package envknob

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
)

// Name is the name of a registered environment variable, e.g. "PTL_NOTIFIER".
type Name string

// The registered variables. Their rows in All say what each one does.
const (
	// Provider selects the verbs provider (read by internal/verbs).
	Provider Name = "PTL_PROVIDER"
	// SoftPin selects how the soft provider pins memory (internal/verbs/soft).
	SoftPin Name = "PTL_SOFT_PIN"
	// SoftPath forces the soft provider's path between processes (internal/verbs/soft).
	SoftPath Name = "PTL_SOFT_PATH"
	// SoftTCPCC is the congestion control of the soft provider's TCP links
	// (internal/verbs/soft).
	SoftTCPCC Name = "PTL_SOFT_TCP_CC"
	// Direct turns the engine's direct access to library memory on or off
	// (internal/nic).
	Direct Name = "PTL_DIRECT"
	// LongPut says who moves a long put's data (internal/nic).
	LongPut Name = "PTL_LONG_PUT"
	// ProgressGoroutine turns the NIs' progress goroutines off (internal/nic).
	ProgressGoroutine Name = "PTL_PROGRESS_GOROUTINE"
	// CAPIDebug prints every error the C ABI returns (capi/golib).
	CAPIDebug Name = "PTL_CAPI_DEBUG"
	// CAPIPMI says who speaks to a PMI launcher in a C program (capi/golib).
	CAPIPMI Name = "PTL_CAPI_PMI"
	// GoLib names the Go library the C ABI's shim loads (capi/shim, read in C).
	GoLib Name = "PTL_GOLIB"
	// Notifier selects the pin cache's notifier backend (driverhooks).
	Notifier Name = "PTL_NOTIFIER"
	// CheckPFN turns on the page-frame check of every pin-cache hit (driverhooks).
	CheckPFN Name = "PTL_CHECK_PFN"
	// RCacheMaxEntries bounds the pin cache's entries (regcache).
	RCacheMaxEntries Name = "PTL_RCACHE_MAX_ENTRIES"
	// RCacheMaxBytes bounds the pin cache's pinned bytes (regcache).
	RCacheMaxBytes Name = "PTL_RCACHE_MAX_BYTES"
	// RCacheDisable turns the pin cache off (regcache).
	RCacheDisable Name = "PTL_RCACHE_DISABLE"
	// Rank is a rank's number, set by ptlrun (internal/bootstrap).
	Rank Name = "PTL_RANK"
	// Size is the number of ranks, set by ptlrun (internal/bootstrap).
	Size Name = "PTL_SIZE"
	// BootstrapAddr is the address of ptlrun's bootstrap server (internal/bootstrap).
	BootstrapAddr Name = "PTL_BOOTSTRAP_ADDR"
	// JobKey is the job's secret, set by ptlrun or exported to every rank by the
	// user of another launcher (internal/bootstrap).
	JobKey Name = "PTL_JOB_KEY"
	// PMIVersion forces the PMI version spoken over PMI_FD (internal/bootstrap).
	PMIVersion Name = "PTL_PMI_VERSION"
	// Rendezvous is where the ranks of a Slurm or Open MPI job started without
	// PMI meet (internal/bootstrap).
	Rendezvous Name = "PTL_RENDEZVOUS"
	// NodeAddr is the IPv4 address that names this node to other nodes
	// (internal/bootstrap).
	NodeAddr Name = "PTL_NODE_ADDR"
	// Iface names the network interface whose address names this node
	// (internal/bootstrap).
	Iface Name = "PTL_IFACE"
	// Conformance says whether the conformance corpus test runs (cmd/ptltest's tests).
	Conformance Name = "PTL_CONFORMANCE"
	// CrossThreadSeconds sets how long the pin cache's cross-thread race test runs
	// (regcache's tests).
	CrossThreadSeconds Name = "PTL_CROSSTHREAD_SECONDS"
)

// Knob describes one registered variable.
type Knob struct {
	// Name is the variable.
	Name Name
	// Default is what an unset (or empty) variable means, in words or as a value.
	Default string
	// Values are the values accepted, as a reader would write them.
	Values string
	// Doc says in one line what the variable changes.
	Doc string
	// ReadBy is the package that reads it, relative to the module root.
	ReadBy string
	// Test marks a variable that only the tests read.
	Test bool
}

// knobs is the registry, in the order the README lists it.
var knobs = []Knob{
	{Name: Provider, Default: "auto", Values: "auto, soft, ibv, loopback", ReadBy: "internal/verbs",
		Doc: "the verbs provider NIs use; auto: ibv when a device has an active port, else soft"},
	{Name: SoftPin, Default: "auto", Values: "auto, io_uring, mlock", ReadBy: "internal/verbs/soft",
		Doc: "how the soft provider pins registered memory: long-term page references in an io_uring buffer table (auto's choice where io_uring works), or mlock"},
	{Name: SoftPath, Default: "auto", Values: "auto, tcp", ReadBy: "internal/verbs/soft",
		Doc: "the soft provider's path between two processes; auto: shared memory and cross-memory attach inside a node (same kernel and network namespace), TCP between nodes; tcp: TCP between any two contexts, even of one process (tests, measurements); a context's connection to itself stays in memory"},
	{Name: SoftTCPCC, Default: "reno", Values: "system, or a congestion control the kernel allows (net.ipv4.tcp_allowed_congestion_control; reno always)", ReadBy: "internal/verbs/soft",
		Doc: "the congestion control of the soft provider's TCP links (each end sets its own); system: the kernel's default (net.ipv4.tcp_congestion_control). Reno by default: bbr paces every segment where the device has no fq queue (loopback, veth), which cost a third of the 1 MiB put bandwidth and 2.6% of the 8-byte put latency here (docs/soft.md); a value the kernel refuses fails Connect"},
	{Name: Direct, Default: "auto", Values: "auto, off", ReadBy: "internal/nic",
		Doc: "auto: an initiator stores straight into a list entry over md.Alloc memory of a process on its node (non-matching NI, persistent entry, no event the target must post; docs/direct.md); off: every operation goes through the target"},
	{Name: LongPut, Default: "split", Values: "split, push, pull", ReadBy: "internal/nic",
		Doc: "push: a long put's initiator writes the data (RDMA WRITE) into the range the target matched and names to it; split: the same, but over shared memory a target splits a put of 128 KiB or more and reads the second half itself (RDMA READ) while the initiator writes the first, so both processes copy; pull: the target reads it all (RDMA READ) from the initiator's descriptor. Pull is the initiator's choice, split the target's"},
	{Name: ProgressGoroutine, Default: "1", Values: "0, 1", ReadBy: "internal/nic",
		Doc: "0: no progress goroutine per NI; progress happens only inside the calls that wait or poll, which then never sleep (hosts that poll, measurements)"},
	{Name: CAPIDebug, Default: "0", Values: "0, 1", ReadBy: "capi/golib",
		Doc: "1: the C ABI prints every error it returns to C on standard error, with its cause"},
	{Name: CAPIPMI, Default: "auto", Values: "auto, program, library", ReadBy: "capi/golib",
		Doc: "who uses a PMI launcher's one connection per rank (PMI_FD or PMI_PORT: hydra, Slurm's PMI-2) in a C program; program: the program's own PMI client (an MPI, Sandia OpenSHMEM), PtlInit stays off it and the program maps logical NIs with PtlSetMap; library: PtlInit joins the job through it; auto: program when the process holds PMI_Init, PMI2_Init, MPI_Init or PMPI_Init in its global symbol scope, else library"},
	{Name: GoLib, Default: "libgoportals.so beside libportals.so.4", Values: "a file path", ReadBy: "capi/shim (C)",
		Doc: "the Go library libportals.so.4 loads at the first PtlInit"},
	{Name: Notifier, Default: "auto", Values: "auto, ebpf, seccomp, uffd, explicit", ReadBy: "driverhooks",
		Doc: "the pin cache's notifier backend; auto: ebpf where CAP_BPF and CAP_PERFMON allow it, else uffd; seccomp only by name (its filter is one-way and inherited by children); see docs/notifier.md"},
	{Name: CheckPFN, Default: "0", Values: "1, true, yes, on / 0, false, no, off", ReadBy: "driverhooks",
		Doc: "record page frames at registration and check them on every pin-cache hit (debug; needs root to read frame numbers)"},
	{Name: RCacheMaxEntries, Default: "4096", Values: "a positive integer", ReadBy: "regcache",
		Doc: "the most registrations the pin cache keeps"},
	{Name: RCacheMaxBytes, Default: "1G, lowered to RLIMIT_MEMLOCK", Values: "a positive size in bytes, with an optional K, M, G or T (powers of 1024)", ReadBy: "regcache",
		Doc: "the most bytes the pin cache keeps pinned"},
	{Name: RCacheDisable, Default: "0", Values: "0/1, true/false, yes/no, on/off", ReadBy: "regcache",
		Doc: "no caching: register and deregister memory for every operation"},
	{Name: Rank, Default: "set by ptlrun", Values: "a decimal in [0, PTL_SIZE)", ReadBy: "internal/bootstrap",
		Doc: "this process's rank"},
	{Name: Size, Default: "set by ptlrun", Values: "a decimal ≥ 1", ReadBy: "internal/bootstrap",
		Doc: "the number of ranks in the job"},
	{Name: BootstrapAddr, Default: "set by ptlrun", Values: "tcp:HOST:PORT or unix:PATH", ReadBy: "internal/bootstrap",
		Doc: "the launcher's bootstrap server; when set, the other three ptlrun variables must be too"},
	{Name: JobKey, Default: "set by ptlrun", Values: "a secret (ptlrun: 64 hex digits)", ReadBy: "internal/bootstrap",
		Doc: "the job's secret, which authenticates a rank to the launcher and to its peers on other nodes; a program with its own PMI exports the same value to every rank (without it a process reaches its own node only)"},
	{Name: NodeAddr, Default: "chosen from the interfaces (see PTL_IFACE)", Values: "an IPv4 address of this node", ReadBy: "internal/bootstrap",
		Doc: "the address that names this node to the others (its nid; where its TCP listeners and the ptlrun -hosts server listen); set it, or PTL_IFACE, on a multi-homed node"},
	{Name: Iface, Default: "the first interface up, not loopback, with an IPv4 address that is not link-local, container bridges (docker*, br-*, virbr*) last", Values: "an interface name (e.g. eth0, ib0)", ReadBy: "internal/bootstrap",
		Doc: "the interface whose first IPv4 address names this node; not together with PTL_NODE_ADDR"},
	{Name: PMIVersion, Default: "2 when the launcher set PMI_JOBID (Slurm), else 1", Values: "1, 2", ReadBy: "internal/bootstrap",
		Doc: "the PMI version spoken over PMI_FD (MPICH hydra speaks both, Slurm's srun --mpi=pmi2 only 2); PMI_PORT always means 1"},
	{Name: Rendezvous, Default: "one node: a local socket named after the job; Slurm on several nodes: the step's first node and reserved port", Values: "tcp:HOST:PORT (HOST: rank 0's node)", ReadBy: "internal/bootstrap",
		Doc: "where the ranks of a Slurm or Open MPI job started without PMI meet; rank 0 listens there"},
	{Name: Conformance, Default: "unset: the corpus must be present", Values: "skip, update", ReadBy: "cmd/ptltest", Test: true,
		Doc: "skip: run the tests without the conformance corpus; update: rewrite the list of corpus tests expected to pass (see docs/conformance.md)"},
	{Name: CrossThreadSeconds, Default: "2", Values: "a positive number of seconds", ReadBy: "regcache", Test: true,
		Doc: "how long the pin cache's cross-thread unmap race test runs per backend"},
}

// All returns the registered variables in table order. The slice is a copy.
func All() []Knob { return append([]Knob(nil), knobs...) }

// Info returns the registration of n.
func Info(n Name) (Knob, bool) {
	for _, k := range knobs {
		if k.Name == n {
			return k, true
		}
	}
	return Knob{}, false
}

// Lookup returns the value of the registered variable n and whether it is set, as
// os.LookupEnv does. A name that is not registered reads as unset: a variable must
// be registered before any package can read it.
func Lookup(n Name) (string, bool) {
	if _, ok := Info(n); !ok {
		return "", false
	}
	return os.LookupEnv(string(n))
}

// Get returns the value of the registered variable n, or "" when it is unset or
// not registered.
func Get(n Name) string {
	v, _ := Lookup(n)
	return v
}

// ErrUnregistered is the error of Set on a name that is not registered.
var ErrUnregistered = errors.New("envknob: not a registered goportals variable")

// Set sets the registered variable n for this process and the processes it starts
// afterwards (a tool that turns a knob on for itself, as ptlbench churn does with
// CheckPFN). Setting a name that is not registered fails with ErrUnregistered.
func Set(n Name, v string) error {
	if _, ok := Info(n); !ok {
		return fmt.Errorf("set %s: %w", n, ErrUnregistered)
	}
	return os.Setenv(string(n), v)
}

// Unknown returns, sorted, the variables set in the environment whose names start
// with prefix but that are not registered, as "NAME=value": misspellings a package
// that owns the prefix (regcache owns PTL_RCACHE_) reports instead of ignoring.
func Unknown(prefix string) []string {
	var out []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		if _, ok := Info(Name(k)); !ok {
			out = append(out, kv)
		}
	}
	sort.Strings(out)
	return out
}
