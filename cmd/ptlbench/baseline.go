package main

// The baselines of -compare bound what a put between two processes of one host
// can reach: memcpy inside one process (the memory system's copy speed) and
// process_vm_writev (cross-memory attach) into another process's memory, the
// single-copy kernel path. Both are measured here, by this program, on the
// sizes and message counts that goportals' put_bw uses.
//
// ptlbench starts its helper processes (the target of process_vm_writev and the
// busy host's spinner) by running its own binary again with helperEnv set; the
// init below turns such a process into the helper before anything else runs.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// helperEnv names the helper that a process started by ptlbench is to be.
const helperEnv = "PTLBENCH_HELPER"

// The helpers.
const (
	helperSpin      = "spin"       // spins on one core until its standard input closes
	helperCMATarget = "cma-target" // holds memory for process_vm_writev
)

// errNotSupported marks a baseline this system cannot run.
var errNotSupported = errors.New("not supported on this system")

func init() {
	role := os.Getenv(helperEnv)
	if role == "" {
		return
	}
	var err error
	switch role {
	case helperSpin:
		err = serveSpin(os.Stdin, os.Stdout)
	case helperCMATarget:
		err = serveCMATarget(os.Stdin, os.Stdout, os.Getenv(cmaSizeEnv))
	default:
		err = fmt.Errorf("unknown helper %q", role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "ptlbench helper %s: %v\n", role, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// helper is a running helper process: it reads commands from in and answers
// one line each on out.
type helper struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	out  *bufio.Reader
	done chan error // the helper's end, once it was started

	stopOnce sync.Once
	stopErr  error
}

// startHelper starts this program as helper role with extra environment
// variables, and reads its first line (its greeting).
func startHelper(ctx context.Context, role string, env ...string) (*helper, string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, "", fmt.Errorf("cannot find my own binary to start the %s helper: %w", role, err)
	}
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(append(os.Environ(), helperEnv+"="+role), env...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		in.Close()
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		in.Close()
		return nil, "", fmt.Errorf("start the %s helper: %w", role, err)
	}
	h := &helper{cmd: cmd, in: in, out: bufio.NewReader(out)}
	greeting, err := h.readLine()
	if err != nil {
		h.stop()
		return nil, "", fmt.Errorf("the %s helper said nothing: %w", role, err)
	}
	h.done = make(chan error, 1)
	go func() { h.done <- cmd.Wait() }()
	return h, greeting, nil
}

// readLine reads one line of the helper's answer.
func (h *helper) readLine() (string, error) {
	l, err := h.out.ReadString('\n')
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(l), nil
}

// ask sends one command and reads the answer.
func (h *helper) ask(cmd string) (string, error) {
	if _, err := io.WriteString(h.in, cmd+"\n"); err != nil {
		return "", err
	}
	return h.readLine()
}

// stop closes the helper's input, which ends it, and waits; a helper that does
// not end within a few seconds is killed. It reports how the helper ended, the
// same on every call.
func (h *helper) stop() error {
	h.stopOnce.Do(func() { h.stopErr = h.end() })
	return h.stopErr
}

func (h *helper) end() error {
	h.in.Close()
	if h.done == nil { // the wait was not started yet
		h.cmd.Process.Kill()
		h.cmd.Wait()
		return nil
	}
	select {
	case err := <-h.done:
		return err
	case <-time.After(5 * time.Second):
		h.cmd.Process.Kill()
		<-h.done
		return errors.New("helper did not end when its input closed; killed")
	}
}

// memcpyContender is the memcpy baseline (bandwidth only).
func memcpyContender() *contender {
	return &contender{key: "memcpy", name: "memcpy (one process)",
		run: func(_ context.Context, size int, c counts) (map[metric]float64, error) {
			v, err := memcpyBandwidth(size, c.bwWarmup, c.bwMsgs)
			if err != nil {
				return nil, err
			}
			return map[metric]float64{bandwidth: v}, nil
		}}
}

// memcpyBandwidth copies size bytes msgs times between two buffers of this
// process (after warmup untimed copies) and returns MB/s.
func memcpyBandwidth(size, warmup, msgs int) (float64, error) {
	if size < 1 || msgs < 1 || warmup < 0 {
		return 0, fmt.Errorf("%w: memcpy needs a positive size and count", errUsage)
	}
	src := pattern(3, size, size)
	dst := make([]byte, size)
	for i := 0; i < warmup; i++ {
		copy(dst, src)
	}
	clear(dst)
	start := time.Now()
	for i := 0; i < msgs; i++ {
		copy(dst, src)
	}
	d := time.Since(start)
	if !bytes.Equal(dst, src) {
		return 0, errors.New("memcpy: the copy differs from its source")
	}
	return mbPerSec(size, msgs, d), nil
}

// mbPerSec is msgs messages of size bytes in d, in 10^6 bytes per second.
func mbPerSec(size, msgs int, d time.Duration) float64 {
	return float64(size) * float64(msgs) / max(d.Seconds(), 1e-9) / 1e6
}

// cmaSizeEnv tells the process_vm_writev target how many bytes to hold.
const cmaSizeEnv = "PTLBENCH_CMA_SIZE"

// cmaContender is the process_vm_writev baseline (bandwidth only).
func cmaContender() *contender {
	return &contender{key: "cma", name: "process_vm_writev",
		run: func(ctx context.Context, size int, c counts) (map[metric]float64, error) {
			v, err := cmaBandwidth(ctx, size, c.bwWarmup, c.bwMsgs)
			if err != nil {
				return nil, err
			}
			return map[metric]float64{bandwidth: v}, nil
		}}
}
