package bootstrap

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// The tests of this file run the test binary under real launchers: MPICH's
// hydra (mpiexec.hydra, Debian package mpich) and a one-node Slurm cluster
// (Debian package slurm-wlm, started by testdata/slurm-up.sh as root). They
// skip, saying why, where the launcher is missing.

// pmiHelperEnv switches the test binary into a rank of a launcher test.
const pmiHelperEnv = "PTL_PMI_TEST_HELPER"

func init() {
	if mode := os.Getenv(pmiHelperEnv); mode != "" {
		os.Exit(runExchangeHelper(mode))
	}
}

// helperValue is what rank r publishes under key k in a round: binary bytes
// (every byte value, PMI's separators among them) long enough to need
// several native chunks for "big".
func helperValue(r, round int, k string) []byte {
	if k == "addr" {
		return fmt.Appendf(nil, "rank %d; round=%d\n", r, round)
	}
	v := make([]byte, 3000+r*7+round)
	for i := range v {
		v[i] = byte(i*31 + r*7 + round)
	}
	return v
}

// runExchangeHelper is one rank of a launcher test: it runs exchangeRounds,
// prints "rank R of N ok BACKEND" and exits 0 only if that succeeded.
func runExchangeHelper(mode string) int {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	b, err := Open(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, "open:", err)
		return 10
	}
	if mode == "abort" {
		// The last rank aborts; the others wait in a barrier that only the
		// launcher's teardown ends.
		if b.Rank() == b.Size()-1 {
			fmt.Printf("rank %d aborts\n", b.Rank())
			b.Abort(7, "launcher test aborts on purpose")
			time.Sleep(time.Minute)
			return 0
		}
		err := b.Barrier(ctx)
		fmt.Fprintf(os.Stderr, "rank %d: barrier returned %v\n", b.Rank(), err)
		return 13
	}
	if err := exchangeRounds(ctx, b); err != nil {
		fmt.Fprintf(os.Stderr, "rank %d: %v\n", b.Rank(), err)
		return 11
	}
	fmt.Printf("rank %d of %d ok %s\n", b.Rank(), b.Size(), backendName(b))
	if err := b.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "rank %d: close: %v\n", b.Rank(), err)
		return 12
	}
	return 0
}

// backendName names b's backend: pmi1, pmi2 or its Go type.
func backendName(b Bootstrap) string {
	if p, ok := b.(*PMI); ok {
		return fmt.Sprintf("pmi%d", p.Version())
	}
	return fmt.Sprintf("%T", b)
}

// exchangeRounds runs two rounds of put, fence and get of every rank's values
// (the second replaces the first), a get of a key never put, then a barrier,
// and fails unless every value read back is the one its rank put.
func exchangeRounds(ctx context.Context, b Bootstrap) error {
	r, n := b.Rank(), b.Size()
	for round := range 2 {
		for _, k := range []string{"addr", "big"} {
			if err := b.Put(k, helperValue(r, round, k)); err != nil {
				return fmt.Errorf("put: %w", err)
			}
		}
		if err := b.Fence(ctx); err != nil {
			return fmt.Errorf("fence: %w", err)
		}
		for q := range n {
			for _, k := range []string{"addr", "big"} {
				v, err := b.Get(ctx, q, k)
				if err != nil {
					return fmt.Errorf("round %d: get %d %s: %w", round, q, k, err)
				}
				if want := helperValue(q, round, k); !bytes.Equal(v, want) {
					return fmt.Errorf("round %d: rank %d's %s is %d bytes %q..., want %d bytes", round, q, k, len(v), clip(string(v)), len(want))
				}
			}
		}
	}
	if _, err := b.Get(ctx, (r+1)%n, "never-put"); !errors.Is(err, ErrNotFound) {
		return fmt.Errorf("get of a key never put: %v, want ErrNotFound", err)
	}
	if err := b.Barrier(ctx); err != nil {
		return fmt.Errorf("barrier: %w", err)
	}
	return nil
}

// runLauncher runs a launcher command whose ranks are this test binary in
// helper mode and checks that every rank reported success with the backend.
func runLauncher(t *testing.T, env []string, n int, backend string, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, name, append(args, self)...)
	cmd.Env = append(append(os.Environ(), pmiHelperEnv+"=exchange"), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	t.Logf("%s %s:\n%s%s", name, strings.Join(args, " "), out.String(), errb.String())
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for r := range n {
		want := fmt.Sprintf("rank %d of %d ok %s", r, n, backend)
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(want) + `$`).Match(out.Bytes()) {
			t.Errorf("no line %q", want)
		}
	}
}

// runAbort runs a job whose last rank aborts and checks that the launcher
// ends the whole job, well before the ranks' own timeouts, in the way want
// describes (launchers kill ranks at once, so their output may be lost).
func runAbort(t *testing.T, env []string, want func(code int, out []byte) bool, name string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, name, append(args, self)...)
	cmd.Env = append(append(os.Environ(), pmiHelperEnv+"=abort"), env...)
	out, _ := cmd.CombinedOutput()
	code := cmd.ProcessState.ExitCode()
	t.Logf("%s %s: exit code %d\n%s", name, strings.Join(args, " "), code, out)
	if ctx.Err() != nil {
		t.Fatalf("the job outlived the abort: %v", ctx.Err())
	}
	if !want(code, out) {
		t.Fatal("the launcher did not end the job as an abort")
	}
}

// needHydra skips the test when MPICH's hydra is missing.
func needHydra(t *testing.T) string {
	p, err := exec.LookPath("mpiexec.hydra")
	if err != nil {
		t.Skip("mpiexec.hydra not installed (Debian package mpich): ", err)
	}
	return p
}

func TestHydraPMI1FD(t *testing.T) {
	hydra := needHydra(t)
	runLauncher(t, nil, 3, "pmi1", hydra, "-n", "3")
}

func TestHydraPMI1Port(t *testing.T) {
	hydra := needHydra(t)
	runLauncher(t, nil, 2, "pmi1", hydra, "-pmi-port", "-n", "2")
}

func TestHydraPMI2(t *testing.T) {
	hydra := needHydra(t)
	runLauncher(t, []string{EnvPMIVersion + "=2"}, 2, "pmi2", hydra, "-n", "2")
}

func TestHydraAbort(t *testing.T) {
	hydra := needHydra(t)
	t.Run("pmi1", func(t *testing.T) {
		// hydra exits with the code the rank gave to abort.
		runAbort(t, nil, func(code int, _ []byte) bool { return code == 7 }, hydra, "-n", "2")
	})
	t.Run("pmi2", func(t *testing.T) {
		// hydra 4.0's server does not know PMI-2's abort command (MPICH's own
		// PMI-2 client sends the same): it says so, or is overtaken by the rank's
		// own exit, and ends the job all the same, with a failure status.
		runAbort(t, []string{EnvPMIVersion + "=2"}, func(code int, out []byte) bool {
			return code != 0
		}, hydra, "-n", "2")
	})
}

// slurmCluster starts a one-node Slurm cluster for the test and returns the
// environment entry that points srun at it.
func slurmCluster(t *testing.T) string {
	if os.Geteuid() != 0 {
		t.Skip("a test Slurm cluster needs root (slurmd runs jobs as their users)")
	}
	for _, p := range []string{"slurmctld", "slurmd", "srun", "sinfo"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s not installed (Debian package slurm-wlm): %v", p, err)
		}
	}
	dir := t.TempDir()
	ports := freePorts(t, 2)
	up, err := filepath.Abs("testdata/slurm-up.sh")
	if err != nil {
		t.Fatal(err)
	}
	down := filepath.Join(filepath.Dir(up), "slurm-down.sh")
	t.Cleanup(func() {
		if out, err := exec.Command("bash", down, dir).CombinedOutput(); err != nil {
			t.Errorf("slurm-down: %v\n%s", err, out)
		}
	})
	out, err := exec.Command("bash", up, dir, fmt.Sprint(ports[0]), fmt.Sprint(ports[1])).CombinedOutput()
	if err != nil {
		t.Fatalf("slurm-up: %v\n%s", err, out)
	}
	return "SLURM_CONF=" + filepath.Join(dir, "slurm.conf")
}

func TestSlurm(t *testing.T) {
	conf := slurmCluster(t)
	t.Run("pmi2", func(t *testing.T) {
		runLauncher(t, []string{conf}, 2, "pmi2", "srun", "--mpi=pmi2", "-n", "2", "--overcommit")
	})
	t.Run("env", func(t *testing.T) {
		runLauncher(t, []string{conf}, 2, "*bootstrap.Rendezvous", "srun", "--mpi=none", "-n", "2", "--overcommit")
	})
	t.Run("abort", func(t *testing.T) {
		runAbort(t, []string{conf}, func(code int, out []byte) bool {
			return code != 0 && bytes.Contains(out, []byte("CANCELLED"))
		}, "srun", "--mpi=pmi2", "-n", "2", "--overcommit")
	})
}

// freePorts returns n TCP ports of 127.0.0.1 that were free a moment ago.
func freePorts(t *testing.T, n int) []int {
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports
}
