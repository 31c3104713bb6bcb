package main

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/bootstrap/childtest"
	"github.com/goportals/goportals/internal/netnstest"
)

// tcpPathHeader is a table header naming the TCP path between the ranks.
var tcpPathHeader = regexp.MustCompile(`(?m)^# .*path (shm\+)?tcp,`)

// TestUnderHydraAcrossNodes runs `mpiexec.hydra -n 2 -ppn 1 ptlbench put_lat`
// with one rank in each of two network namespaces joined by veth, and no ssh:
// hydra's manual launcher prints the command line of each node's proxy, and the
// test starts each proxy inside its namespace. The ranks meet through hydra's
// PMI and talk over TCP, which ptlbench's table names.
func TestUnderHydraAcrossNodes(t *testing.T) {
	hydra, err := exec.LookPath("mpiexec.hydra")
	if err != nil {
		t.Skip("mpiexec.hydra not installed (Debian package mpich)")
	}
	// Hydra writes the proxies' command lines through stdio, buffered when its
	// output is a pipe: stdbuf makes them arrive as they are written.
	stdbuf, err := exec.LookPath("stdbuf")
	if err != nil {
		t.Skip("stdbuf (coreutils) not installed: hydra's manual launcher output would stay in its buffer")
	}
	p := netnstest.Setup(t)
	bin := buildPtlbench(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	argv := p.Wrap(0, stdbuf, "-oL", hydra, "-launcher", "manual", "-hosts", p.Addrs[0]+","+p.Addrs[1], "-n", "2", "-ppn", "1",
		bin, "-min", "8", "-max", "64", "-iters", "200", "put_lat")
	mpiexec := exec.CommandContext(ctx, argv[0], argv[1:]...)
	mpiexec.Env = env
	mpiexec.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	mpiexec.Cancel = func() error { return syscall.Kill(-mpiexec.Process.Pid, syscall.SIGKILL) }
	var stderr bytes.Buffer
	mpiexec.Stderr = &stderr
	stdout, err := mpiexec.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := mpiexec.Start(); err != nil {
		t.Fatal(err)
	}
	// The proxies' command lines, one per host in the order of -hosts.
	r := bufio.NewReader(stdout)
	var proxies [][]string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			cancel()
			mpiexec.Wait()
			t.Fatalf("hydra ended before it printed its proxies (%v); printed %q; stderr:\n%s", err, proxies, stderr.String())
		}
		if strings.HasPrefix(line, "HYDRA_LAUNCH_END") {
			break
		}
		if cmd, ok := strings.CutPrefix(line, "HYDRA_LAUNCH: "); ok {
			proxies = append(proxies, strings.Fields(cmd))
		}
	}
	if len(proxies) != 2 {
		cancel()
		mpiexec.Wait()
		t.Fatalf("hydra printed %d proxy command lines for 2 hosts: %q", len(proxies), proxies)
	}
	var wg sync.WaitGroup
	proxyOut := make([]bytes.Buffer, len(proxies))
	proxyErr := make([]error, len(proxies))
	for i, pc := range proxies {
		a := p.Wrap(i, pc...)
		cmd := exec.CommandContext(ctx, a[0], a[1:]...)
		cmd.Env = env
		cmd.Stdout, cmd.Stderr = &proxyOut[i], &proxyOut[i]
		if err := cmd.Start(); err != nil {
			cancel()
			mpiexec.Wait()
			t.Fatalf("proxy %d: %v", i, err)
		}
		wg.Go(func() { proxyErr[i] = cmd.Wait() })
	}
	rest, _ := io.ReadAll(r)
	werr := mpiexec.Wait()
	wg.Wait()
	out := string(rest) + stderr.String()
	code := -1
	if mpiexec.ProcessState != nil {
		code = mpiexec.ProcessState.ExitCode()
	}
	if err := childtest.Check(strings.Join(argv, " "), code, 0, out); err != nil {
		t.Fatalf("%v (wait: %v; proxies: %v, %v)", err, werr, proxyErr, []string{proxyOut[0].String(), proxyOut[1].String()})
	}
	// The path names every kind of connection of the NI, its connection to
	// itself (shared memory) included.
	if !strings.Contains(out, "latency_us") || !tcpPathHeader.MatchString(out) {
		t.Fatalf("no latency table over the TCP path:\n%s", out)
	}
	t.Logf("hydra across two namespaces:\n%s", out)
}
