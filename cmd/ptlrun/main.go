package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/goportals/goportals/internal/bootstrap"
)

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	code := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr, sigs)
	signal.Stop(sigs)
	os.Exit(code)
}

// exitUsage is the status of a command-line error.
const exitUsage = 2

// run is ptlrun without the process around it: it parses args, launches the job
// and returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, sigs <-chan os.Signal) int {
	fs := flag.NewFlagSet("ptlrun", flag.ContinueOnError)
	fs.SetOutput(stderr)
	np := fs.Int("np", 0, "number of ranks to start (required)")
	fs.IntVar(np, "n", 0, "same as -np")
	timeout := fs.Duration("timeout", 0, "tear the job down after this long (e.g. 30s, 5m); 0 means no limit")
	grace := fs.Duration("grace", bootstrap.DefaultGrace, "time between SIGTERM and SIGKILL at teardown")
	prefix := fs.Bool("prefix", false, `start every output line with "[rank] "`)
	unix := fs.Bool("unix", false, "serve the bootstrap on a unix socket instead of TCP 127.0.0.1")
	hosts := fs.String("hosts", "", "HOST:PORT,...: start the ranks through the ptlrun agents at these addresses (rank r on host r mod N) instead of here")
	agent := fs.String("agent", "", "ADDR: run as this node's agent, listening at ADDR (e.g. :7300), starting the ranks launchers send")
	keyFile := fs.String("agent-key-file", "", "the agents' shared secret: -agent creates it (mode 0600) when missing; -hosts reads it")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `usage: ptlrun -np N [-timeout D] [-grace D] [-prefix] [-unix] [-hosts H:P,... -agent-key-file F] prog [args...]
       ptlrun -agent ADDR -agent-key-file F

Starts N local ranks of prog with the goportals bootstrap, like mpirun. Each rank
inherits this environment plus PTL_RANK, PTL_SIZE, PTL_BOOTSTRAP_ADDR, PTL_JOB_KEY.
The job is torn down (SIGTERM, then SIGKILL after -grace) when a rank fails or
aborts, or the timeout passes; SIGINT/SIGTERM are forwarded to the ranks.
With -hosts the ranks start on other nodes through ptlrun agents (one per node,
started with -agent and the same -agent-key-file; no ssh): rank r runs on host
r mod N, the bootstrap listens on every interface, and output and exit statuses
come back here; an agent kills its ranks when the launcher goes away.
Exit status: 0 if every rank exited 0, else the first failing rank's status
(128+signal if killed), the Abort code, 124 on timeout, 127 if prog is not found.

Options:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	if *agent != "" {
		// SIGINT or SIGTERM stops the agent (and, through its connections'
		// teardown, the ranks it runs).
		actx, stop := context.WithCancel(ctx)
		defer stop()
		go func() {
			select {
			case <-sigs:
				stop()
			case <-actx.Done():
			}
		}()
		return runAgent(actx, *agent, *keyFile, stdout, stderr)
	}
	if *np < 1 {
		fmt.Fprintln(stderr, "ptlrun: -np N with N ≥ 1 is required")
		fs.Usage()
		return exitUsage
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "ptlrun: no program given")
		fs.Usage()
		return exitUsage
	}
	if *timeout < 0 || *grace < 0 {
		fmt.Fprintln(stderr, "ptlrun: -timeout and -grace must not be negative")
		return exitUsage
	}
	cfg := bootstrap.LaunchConfig{
		N:       *np,
		Argv:    fs.Args(),
		Stdout:  stdout,
		Stderr:  stderr,
		Prefix:  *prefix,
		Timeout: *timeout,
		Grace:   *grace,
		Signals: sigs,
	}
	if *grace == 0 {
		cfg.Grace = time.Nanosecond // "kill at once" rather than the default
	}
	if *unix {
		cfg.Network = "unix"
	}
	if *hosts != "" {
		if *keyFile == "" {
			fmt.Fprintln(stderr, "ptlrun: -hosts needs -agent-key-file, the secret the agents were started with")
			return exitUsage
		}
		key, err := os.ReadFile(*keyFile)
		if err != nil {
			fmt.Fprintf(stderr, "ptlrun: %v\n", err)
			return exitUsage
		}
		cfg.Hosts, cfg.AgentKey = strings.Split(*hosts, ","), strings.TrimSpace(string(key))
	}
	res, err := bootstrap.Launch(ctx, cfg)
	if res == nil {
		fmt.Fprintf(stderr, "ptlrun: %v\n", err)
		return 1
	}
	if err != nil {
		fmt.Fprintf(stderr, "ptlrun: %v (%s)\n", err, tornDown(res))
	}
	if res.OutputErr != nil {
		fmt.Fprintf(stderr, "ptlrun: writing the ranks' output: %v\n", res.OutputErr)
		if res.ExitCode == 0 {
			return 1
		}
	}
	return res.ExitCode
}

// runAgent serves launchers at addr until ctx ends.
func runAgent(ctx context.Context, addr, keyFile string, stdout, stderr io.Writer) int {
	if keyFile == "" {
		fmt.Fprintln(stderr, "ptlrun: -agent needs -agent-key-file (created when missing)")
		return exitUsage
	}
	key, err := os.ReadFile(keyFile)
	if errors.Is(err, os.ErrNotExist) {
		var b [32]byte
		rand.Read(b[:])
		key = []byte(hex.EncodeToString(b[:]))
		err = os.WriteFile(keyFile, append(key, '\n'), 0o600)
	}
	if err != nil {
		fmt.Fprintf(stderr, "ptlrun: agent key: %v\n", err)
		return 1
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintf(stderr, "ptlrun: agent: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "ptlrun agent listening at %s\n", ln.Addr())
	if err := bootstrap.ServeAgent(ctx, ln, strings.TrimSpace(string(key))); err != nil {
		fmt.Fprintf(stderr, "ptlrun: agent: %v\n", err)
		return 1
	}
	return 0
}

// tornDown counts the ranks the teardown killed, for the summary line.
func tornDown(res *bootstrap.JobResult) string {
	killed := 0
	for _, st := range res.Ranks {
		if st.Killed {
			killed++
		}
	}
	return fmt.Sprintf("%d of %d ranks torn down", killed, len(res.Ranks))
}
