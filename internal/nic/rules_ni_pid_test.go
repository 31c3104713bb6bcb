package nic

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// Rule 20: physical ids are unique on a node. An explicit pid in use (by another
// process on the node, or by another NI of this process with a different pid) is
// PTL_PID_IN_USE; PID_ANY picks a free one; all NIs of a process share its pid, as
// the reference's interface does; the pid is free again once the process has no NI.

// rulesInitAll runs NIInit on every process of a job at once (NIInit is
// collective) and fails the test on any error.
func rulesInitAll(t *testing.T, procs []*Process, opts NIOptions, pid PID) []*NI {
	t.Helper()
	nis := make([]*NI, len(procs))
	errs := make([]error, len(procs))
	var wg sync.WaitGroup
	for r, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nis[r], errs[r] = p.NIInit(IfaceDefault, opts, pid, nil)
		}()
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: NIInit: %v", r, err)
		}
	}
	return nis
}

func rulesPID(t *testing.T, ni *NI) PID {
	t.Helper()
	id, err := ni.PhysID()
	if err != nil {
		t.Fatal(err)
	}
	return id.PID
}

func TestRulesNIPIDAnyUniqueOnNode(t *testing.T) {
	seen := map[PID]string{}
	for j, opts := range []NIOptions{NIMatching | NIPhysical, NIMatching | NIPhysical, NINoMatching | NILogical} {
		nis, _ := rulesJob(t, 2, opts, PIDAny, nil)
		for r, ni := range nis {
			pid := rulesPID(t, ni)
			if pid == PIDAny {
				t.Errorf("job %d rank %d got PID_ANY as its pid", j, r)
			}
			who := fmt.Sprintf("job %d rank %d", j, r)
			if other, dup := seen[pid]; dup {
				t.Errorf("%s and %s both have pid %d", who, other, pid)
			}
			seen[pid] = who
		}
	}
}

func TestRulesNIPIDExplicitInUse(t *testing.T) {
	nis, _ := rulesJob(t, 2, NIMatching|NIPhysical, PIDAny, nil)
	for r, ni := range nis {
		pid := rulesPID(t, ni)
		for _, opts := range []NIOptions{NIMatching | NIPhysical, NINoMatching | NILogical} {
			_, err := rulesSolo(t).NIInit(IfaceDefault, opts, pid, nil)
			wantErrno(t, fmt.Sprintf("NIInit with the pid %d of rank %d", pid, r), err, PIDInUse)
		}
	}
}

func TestRulesNIPIDExplicitGranted(t *testing.T) {
	first := rulesSolo(t)
	ni, err := first.NIInit(IfaceDefault, NIMatching|NIPhysical, PIDAny, nil)
	if err != nil {
		t.Fatal(err)
	}
	pid := rulesPID(t, ni)
	first.Close()
	second := rulesSolo(t)
	ni, err = second.NIInit(IfaceDefault, NIMatching|NIPhysical, pid, nil)
	if err != nil {
		t.Fatalf("NIInit with the free pid %d: %v", pid, err)
	}
	if got := rulesPID(t, ni); got != pid {
		t.Fatalf("NIInit with pid %d gave pid %d", pid, got)
	}
	_, err = rulesSolo(t).NIInit(IfaceDefault, NIMatching|NIPhysical, pid, nil)
	wantErrno(t, "NIInit with a pid just granted to another process", err, PIDInUse)
}

func TestRulesNIPIDSharedByProcessNIs(t *testing.T) {
	j := newMemJob(2)
	procs := make([]*Process, 2)
	for r := range procs {
		p, err := NewProcess(memRank{j, r}, nil)
		if err != nil {
			t.Fatal(err)
		}
		procs[r] = p
		t.Cleanup(func() { p.Close() })
	}
	phys := rulesInitAll(t, procs, NIMatching|NIPhysical, PIDAny)
	logical := rulesInitAll(t, procs, NIMatching|NILogical, PIDAny)
	for r := range procs {
		pid := rulesPID(t, phys[r])
		if got := rulesPID(t, logical[r]); got != pid {
			t.Errorf("rank %d: logical NI pid %d, physical NI pid %d: one process, one pid", r, got, pid)
		}
	}
	// The process's own pid, asked explicitly, is granted to its next NI.
	pids := []PID{rulesPID(t, phys[0]), rulesPID(t, phys[1])}
	nis := make([]*NI, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for r, p := range procs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nis[r], errs[r] = p.NIInit(IfaceDefault, NINoMatching|NIPhysical, pids[r], nil)
		}()
	}
	wg.Wait()
	for r := range procs {
		if errs[r] != nil || rulesPID(t, nis[r]) != pids[r] {
			t.Errorf("rank %d: NIInit with its own pid %d: %v", r, pids[r], errs[r])
		}
	}
	// Another pid on a new NI of the same process is refused before it connects.
	other := pids[0] + 1
	if other == pids[1] {
		other++
	}
	_, err := procs[0].NIInit(IfaceDefault, NINoMatching|NILogical, other, nil)
	wantErrno(t, "NIInit with a pid other than the process's", err, ArgInvalid)
	// A second NIInit of an existing NI ignores pid (the specification's note).
	again, err := procs[0].NIInit(IfaceDefault, NIMatching|NIPhysical, other, nil)
	if err != nil || again != phys[0] {
		t.Errorf("second NIInit of an NI with another pid: %v", err)
	} else {
		again.Fini()
	}
}

func TestRulesNIPIDReleasedWithLastNI(t *testing.T) {
	p := rulesSolo(t)
	phys, err := p.NIInit(IfaceDefault, NIMatching|NIPhysical, PIDAny, nil)
	if err != nil {
		t.Fatal(err)
	}
	logical, err := p.NIInit(IfaceDefault, NIMatching|NILogical, PIDAny, nil)
	if err != nil {
		t.Fatal(err)
	}
	pid := rulesPID(t, phys)
	phys.Fini()
	_, err = rulesSolo(t).NIInit(IfaceDefault, NIMatching|NIPhysical, pid, nil)
	wantErrno(t, "NIInit with the pid of a process that still has an NI", err, PIDInUse)
	logical.Fini()
	ni, err := rulesSolo(t).NIInit(IfaceDefault, NIMatching|NIPhysical, pid, nil)
	if err != nil {
		t.Fatalf("NIInit with the pid of a process without NIs: %v", err)
	}
	if got := rulesPID(t, ni); got != pid {
		t.Errorf("got pid %d, want %d", got, pid)
	}
}

func TestRulesNIPIDInvalid(t *testing.T) {
	for _, pid := range []PID{PIDAny + 1, 1 << 20, ^PID(0)} {
		_, err := rulesSolo(t).NIInit(IfaceDefault, NIMatching|NIPhysical, pid, nil)
		wantErrno(t, fmt.Sprintf("NIInit with pid %#x", uint32(pid)), err, ArgInvalid)
	}
}

// rulesHolderEnv makes TestRulesNIPIDHolderProcess hold a pid for another test.
const rulesHolderEnv = "PORTALS_RULES_NI_PID_HOLDER"

// TestRulesNIPIDHolderProcess is the other process of TestRulesNIPIDAcrossProcesses:
// it opens an NI, prints its pid and keeps it until its standard input closes.
func TestRulesNIPIDHolderProcess(t *testing.T) {
	if os.Getenv(rulesHolderEnv) == "" {
		t.Skip("run by TestRulesNIPIDAcrossProcesses")
	}
	p := rulesSolo(t)
	ni, err := p.NIInit(IfaceDefault, NIMatching|NIPhysical, PIDAny, nil)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("holding pid %d\n", rulesPID(t, ni))
	io.Copy(io.Discard, os.Stdin)
}

func TestRulesNIPIDAcrossProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts another process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestRulesNIPIDHolderProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), rulesHolderEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Wait()
	}()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "holding pid ") {
				lines <- sc.Text()
			}
		}
		close(lines)
		io.Copy(io.Discard, stdout)
	}()
	var pid PID
	select {
	case l, ok := <-lines:
		if !ok {
			t.Fatal("the holder process ended without a pid")
		}
		if _, err := fmt.Sscanf(l, "holding pid %d", &pid); err != nil {
			t.Fatalf("holder said %q", l)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the holder process did not report its pid")
	}
	_, err = rulesSolo(t).NIInit(IfaceDefault, NIMatching|NIPhysical, pid, nil)
	wantErrno(t, fmt.Sprintf("NIInit with pid %d held by another process", pid), err, PIDInUse)
	for i := 0; i < 4; i++ {
		ni, err := rulesSolo(t).NIInit(IfaceDefault, NIMatching|NIPhysical, PIDAny, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := rulesPID(t, ni); got == pid {
			t.Errorf("PID_ANY gave pid %d, held by another process", got)
		}
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("holder process: %v", err)
	}
	ni, err := rulesSolo(t).NIInit(IfaceDefault, NIMatching|NIPhysical, pid, nil)
	if err != nil {
		t.Fatalf("NIInit with pid %d after its holder exited: %v", pid, err)
	}
	if got := rulesPID(t, ni); got != pid {
		t.Errorf("got pid %d, want %d", got, pid)
	}
}
