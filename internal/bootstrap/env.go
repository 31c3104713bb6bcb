package bootstrap

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/goportals/goportals/internal/envknob"
)

// lookupEnv is how Open reads the environment: the launcher's PTL_ variables
// through envknob, where every goportals variable is registered, and other
// launchers' variables (PMI_*, OMPI_*, SLURM_*) directly, except the PMI
// connection LeavePMI leaves to the program.
func lookupEnv(name string) (string, bool) {
	if pmiLeft(name) {
		return "", false
	}
	if strings.HasPrefix(name, "PTL_") {
		return envknob.Lookup(envknob.Name(name))
	}
	return os.LookupEnv(name)
}

// Environment variables that ptlrun (Launch) gives each rank; see doc.go.
const (
	// EnvRank holds the rank, a decimal in [0, size).
	EnvRank = string(envknob.Rank)
	// EnvSize holds the job size, a decimal ≥ 1.
	EnvSize = string(envknob.Size)
	// EnvAddr holds the launcher's bootstrap server: "tcp:HOST:PORT" or "unix:PATH".
	EnvAddr = string(envknob.BootstrapAddr)
	// EnvJobKey holds the job's secret key (64 hex digits) that authenticates a
	// rank to the server.
	EnvJobKey = string(envknob.JobKey)
)

// ClientConfig says how a rank reaches its launcher's server; Dial takes it.
// Server.ClientConfig builds it for in-process ranks; Open reads it from the
// environment.
type ClientConfig struct {
	// Addr is the server address, "tcp:HOST:PORT" or "unix:PATH".
	Addr string
	// Rank and Size are this rank and the job size.
	Rank, Size int
	// JobKey is the job's secret key.
	JobKey string
}

// Env returns the environment entries ("NAME=value") that carry c to a child.
func (c ClientConfig) Env() []string {
	return []string{
		EnvRank + "=" + strconv.Itoa(c.Rank),
		EnvSize + "=" + strconv.Itoa(c.Size),
		EnvAddr + "=" + c.Addr,
		EnvJobKey + "=" + c.JobKey,
	}
}

// configFromEnv reads and validates the ptlrun variables.
func configFromEnv(lookup func(string) (string, bool)) (ClientConfig, error) {
	var c ClientConfig
	get := func(name string) (string, error) {
		v, ok := lookup(name)
		if !ok || v == "" {
			return "", errDetail(ErrBadEnv, "%s is set but %s is missing", EnvAddr, name)
		}
		return v, nil
	}
	var err error
	if c.Addr, err = get(EnvAddr); err != nil {
		return c, err
	}
	if _, _, err := splitAddr(c.Addr); err != nil {
		return c, err
	}
	if c.JobKey, err = get(EnvJobKey); err != nil {
		return c, err
	}
	s, err := get(EnvSize)
	if err != nil {
		return c, err
	}
	if c.Size, err = strconv.Atoi(s); err != nil || c.Size < 1 {
		return c, errDetail(ErrBadEnv, "%s=%q is not a size ≥ 1", EnvSize, s)
	}
	r, err := get(EnvRank)
	if err != nil {
		return c, err
	}
	if c.Rank, err = strconv.Atoi(r); err != nil || c.Rank < 0 || c.Rank >= c.Size {
		return c, errDetail(ErrBadEnv, "%s=%q is not a rank in [0, %d)", EnvRank, r, c.Size)
	}
	return c, nil
}

// splitAddr splits "tcp:HOST:PORT" or "unix:PATH" into a network and address.
func splitAddr(addr string) (network, address string, err error) {
	network, address, ok := strings.Cut(addr, ":")
	if !ok || address == "" || (network != "tcp" && network != "unix") {
		return "", "", errDetail(ErrBadEnv, "address %q is not tcp:HOST:PORT or unix:PATH", addr)
	}
	return network, address, nil
}

// foreignLauncher reports whether another launcher started this process as one
// of several ranks, and which, so that Open never silently runs N lone rank 0s.
func foreignLauncher(lookup func(string) (string, bool)) (name string, size int, ok bool) {
	sizeOf := func(v string) int {
		n, err := strconv.Atoi(v)
		if err != nil {
			return 0
		}
		return n
	}
	if _, fd := lookup("PMI_FD"); fd {
		if v, _ := lookup("PMI_SIZE"); sizeOf(v) != 1 {
			return "a PMI launcher (PMI_FD)", sizeOf(v), true
		}
	}
	if _, port := lookup("PMI_PORT"); port {
		if v, _ := lookup("PMI_SIZE"); sizeOf(v) != 1 {
			return "a PMI launcher (PMI_PORT)", sizeOf(v), true
		}
	}
	if v, ok := lookup("OMPI_COMM_WORLD_SIZE"); ok && sizeOf(v) > 1 {
		return "Open MPI", sizeOf(v), true
	}
	if _, ok := lookup("SLURM_PROCID"); ok {
		v, ok := lookup("SLURM_STEP_NUM_TASKS")
		if !ok {
			v, _ = lookup("SLURM_NTASKS")
		}
		if sizeOf(v) > 1 {
			return "Slurm", sizeOf(v), true
		}
	}
	return "", 0, false
}

// EnvPMIVersion forces the PMI version spoken over PMI_FD: "1" or "2". Without
// it PMI-2 is used when the launcher set PMI_JOBID (Slurm's srun --mpi=pmi2
// does, hydra does not), PMI-1 otherwise; PMI_PORT always means PMI-1.
const EnvPMIVersion = string(envknob.PMIVersion)

// openLauncher opens the backend of the launcher that foreignLauncher found:
// PMI over PMI_FD or PMI_PORT first, then the Slurm and Open MPI environments
// with a rendezvous.
func openLauncher(ctx context.Context, lookup func(string) (string, bool)) (Bootstrap, error) {
	if _, ok := lookup("PMI_FD"); ok {
		rank, err := lookupInt(lookup, "PMI_RANK")
		if err != nil {
			return nil, err
		}
		jobid, hasJob := lookup("PMI_JOBID")
		version := "1"
		if hasJob {
			version = "2"
		}
		if v, ok := lookup(EnvPMIVersion); ok && v != "" {
			version = v
		}
		if version != "1" && version != "2" {
			return nil, errDetail(ErrBadEnv, "%s=%q is not 1 or 2", EnvPMIVersion, version)
		}
		size := 0
		if version == "1" {
			if size, err = lookupInt(lookup, "PMI_SIZE"); err != nil {
				return nil, err
			}
		}
		conn, err := pmiFDConn(lookup)
		if err != nil {
			return nil, err
		}
		if version == "2" {
			return DialPMI2(ctx, conn, rank, jobid)
		}
		return DialPMI1(ctx, conn, -1, rank, size)
	}
	if port, ok := lookup("PMI_PORT"); ok {
		id, err := lookupInt(lookup, "PMI_ID")
		if err != nil {
			return nil, err
		}
		if id < 0 {
			return nil, errDetail(ErrBadEnv, "PMI_ID=%d is negative", id)
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", port)
		if err != nil {
			return nil, wrapErr(ErrLauncherLost, err)
		}
		return DialPMI1(ctx, conn, id, -1, -1)
	}
	var rv rendezvous
	var err error
	if _, ok := lookup("OMPI_COMM_WORLD_SIZE"); ok {
		rv, err = ompiRendezvous(lookup)
	} else {
		rv, err = slurmRendezvous(lookup)
	}
	if err != nil {
		return nil, err
	}
	return openRendezvous(ctx, rv)
}

// Launched reports whether a launcher started this process as a rank of a
// job, so that Open will not return a lone process: ptlrun (PTL_BOOTSTRAP_ADDR),
// a PMI launcher, Open MPI or Slurm with more than one rank. Tools that
// otherwise start their own ranks (ptlbench) ask it first.
func Launched() bool { return launchedFrom(lookupEnv) }

// launchedFrom is Launched with the environment read through lookup.
func launchedFrom(lookup func(string) (string, bool)) bool {
	if _, ok := lookup(EnvAddr); ok {
		return true
	}
	_, _, ok := foreignLauncher(lookup)
	return ok
}
