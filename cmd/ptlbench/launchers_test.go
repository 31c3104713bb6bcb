package main

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goportals/goportals/internal/bootstrap/childtest"
)

// buildPtlbench builds ptlbench (with the race detector when the test has it).
func buildPtlbench(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "ptlbench")
	cmd := exec.Command("go", append(append([]string{"build"}, childtest.BuildFlags()...), "-o", bin, ".")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// runUnder runs ptlbench put_lat under a foreign launcher (argv then ptlbench and
// its arguments) and checks its table.
func runUnder(t *testing.T, env []string, argv ...string) {
	t.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(append(os.Environ(), "GORACE=atexit_sleep_ms=0"), env...)
	out, _ := cmd.CombinedOutput()
	if err := childtest.Check(strings.Join(argv, " "), cmd.ProcessState.ExitCode(), 0, string(out)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "latency_us") || !strings.Contains(string(out), "path shm") {
		t.Fatalf("no latency table naming its path:\n%s", out)
	}
}

// TestUnderHydra runs `mpiexec.hydra -n 2 ptlbench put_lat`: the ranks find each
// other through hydra's PMI, no ptlrun involved.
func TestUnderHydra(t *testing.T) {
	hydra, err := exec.LookPath("mpiexec.hydra")
	if err != nil {
		t.Skip("mpiexec.hydra not installed (Debian package mpich)")
	}
	bin := buildPtlbench(t)
	runUnder(t, nil, hydra, "-n", "2", bin, "-min", "8", "-max", "64", "-iters", "200", "put_lat")
}

// TestUnderSlurm starts a one-node Slurm (root only) and runs
// `srun --mpi=pmi2 -n 2 ptlbench put_lat`.
func TestUnderSlurm(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a test Slurm cluster needs root (slurmd runs jobs as their users)")
	}
	for _, p := range []string{"slurmctld", "slurmd", "srun", "sinfo"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s not installed (Debian package slurm-wlm): %v", p, err)
		}
	}
	bin := buildPtlbench(t)
	dir := t.TempDir()
	var ports []int
	for range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
		ln.Close() // free again for the daemons
	}
	scripts, err := filepath.Abs(filepath.Join("..", "..", "internal", "bootstrap", "testdata"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("bash", filepath.Join(scripts, "slurm-down.sh"), dir).CombinedOutput(); err != nil {
			t.Errorf("slurm-down: %v\n%s", err, out)
		}
	})
	up := exec.Command("bash", filepath.Join(scripts, "slurm-up.sh"), dir, fmt.Sprint(ports[0]), fmt.Sprint(ports[1]))
	if out, err := up.CombinedOutput(); err != nil {
		t.Fatalf("slurm-up: %v\n%s", err, out)
	}
	conf := "SLURM_CONF=" + filepath.Join(dir, "slurm.conf")
	runUnder(t, []string{conf}, "srun", "--mpi=pmi2", "-n", "2", "--overcommit", bin,
		"-min", "8", "-max", "64", "-iters", "200", "put_lat")
}
