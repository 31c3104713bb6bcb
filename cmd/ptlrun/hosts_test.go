package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goportals/goportals/internal/bootstrap/childtest"
	"github.com/goportals/goportals/internal/netnstest"
)

// startAgent starts `ptlrun -agent :0` (under wrap, if any) and returns the port
// it listens on; the agent is killed when the test ends.
func startAgent(t *testing.T, bin, keyFile string, wrap []string) string {
	t.Helper()
	argv := append(append([]string(nil), wrap...), bin, "-agent", ":0", "-agent-key-file", keyFile)
	cmd := exec.Command(argv[0], argv[1:]...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			line <- sc.Text()
		}
		close(line)
	}()
	select {
	case l, ok := <-line:
		i := strings.LastIndex(l, ":")
		if !ok || !strings.HasPrefix(l, "ptlrun agent listening at") || i < 0 {
			t.Fatalf("agent said %q", l)
		}
		return l[i+1:]
	case <-time.After(30 * time.Second):
		t.Fatal("the agent did not start")
	}
	return ""
}

// TestHostsAcrossNodes runs the put/get demo with its two ranks on two nodes: one
// ptlrun agent here, one in a network namespace joined by veth; ptlrun -hosts
// starts a rank through each, with no ssh. The ranks' traffic takes the TCP path.
func TestHostsAcrossNodes(t *testing.T) {
	requireLinux(t)
	h := netnstest.SetupHost(t)
	bin := buildPtlrun(t)
	dir := t.TempDir()
	demo := filepath.Join(dir, "putget")
	build := exec.Command("go", append(append([]string{"build"}, childtest.BuildFlags()...), "-o", demo, "../../examples/putget")...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the demo: %v\n%s", err, out)
	}
	key := filepath.Join(dir, "agent.key")
	here := startAgent(t, bin, key, nil)
	there := startAgent(t, bin, key, h.Wrap())
	cmd := exec.Command(bin, "-np", "2", "-prefix", "-timeout", "2m",
		"-hosts", "127.0.0.1:"+here+","+h.Addr+":"+there, "-agent-key-file", key, demo, "-iters", "200", "-puts", "20")
	cmd.Env = append(os.Environ(), "GORACE=atexit_sleep_ms=0")
	out, _ := cmd.CombinedOutput()
	if err := childtest.Check("ptlrun -hosts", cmd.ProcessState.ExitCode(), 0, string(out)); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"[0] wrote 8 B", "verified", "[1] rank 1"} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	// A wrong key is refused by the agent, and ptlrun says so.
	bad := filepath.Join(dir, "other.key")
	os.WriteFile(bad, []byte("not-the-key\n"), 0o600)
	cmd = exec.Command(bin, "-np", "1", "-timeout", "1m", "-hosts", "127.0.0.1:"+here, "-agent-key-file", bad, demo)
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "wrong agent key") {
		t.Fatalf("a wrong agent key: %v\n%s", err, out)
	}
}
