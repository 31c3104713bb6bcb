package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/goportals/goportals/tests"
)

func main() {
	if tests.IsChild() {
		os.Exit(tests.ChildMain(os.Stdout))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// rankProgram returns the program that runs one rank of a test: this executable,
// which turns into a rank when tests.IsChild. Tests may replace it.
var rankProgram = os.Executable

// config is the parsed command line.
type config struct {
	np      int
	timeout time.Duration
	jobs    int
	verbose bool
	junit   string
	strict  bool
	netns   string
	paths   []string
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	fs := flag.NewFlagSet("ptltest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	c := &config{}
	fs.IntVar(&c.np, "np", 0, "processes per test (default: from the enclosing test_nN folder, else 1)")
	fs.DurationVar(&c.timeout, "timeout", 60*time.Second, "time limit of one test; a test still running fails")
	fs.IntVar(&c.jobs, "j", 1, "tests run at once")
	fs.BoolVar(&c.verbose, "v", false, "print each rank's trace of calls and checks on standard error")
	fs.StringVar(&c.junit, "junit", "", "write a JUnit XML report to this file")
	fs.StringVar(&c.netns, "netns", "", "NS1,NS2,...: run rank r in network namespace r mod N (ip netns exec; root), so ranks are on different nodes and talk over TCP")
	fs.BoolVar(&c.strict, "strict", false, "fail a test that uses an unknown symbol instead of reading it as the reference does (strtol) with a warning")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: ptltest [-np N] [-timeout D] [-j N] [-v] [-strict] [-junit FILE] PATH...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	c.paths = fs.Args()
	npSet := false
	fs.Visit(func(f *flag.Flag) { npSet = npSet || f.Name == "np" })
	switch {
	case len(c.paths) == 0:
		fs.Usage()
		return nil, fmt.Errorf("no test path given")
	case npSet && c.np < 1:
		return nil, fmt.Errorf("-np %d: want at least 1 process (leave -np out to take each test's count from its test_nN folder)", c.np)
	case c.jobs < 1:
		return nil, fmt.Errorf("-j %d: want at least 1", c.jobs)
	case c.timeout <= 0:
		return nil, fmt.Errorf("-timeout %v: want a positive duration", c.timeout)
	}
	return c, nil
}

// netnsWrap returns a command that runs its arguments in namespace
// names[PTL_RANK mod len(names)].
func netnsWrap(names []string) []string {
	script := `r=${PTL_RANK:-0}; i=$(( r % COUNT )); shift $i; ns="$1"; shift $(( COUNT - i )); exec ip netns exec "$ns" "$@"`
	script = strings.ReplaceAll(script, "COUNT", strconv.Itoa(len(names)))
	return append([]string{"sh", "-c", script, "ptltest-netns"}, names...)
}

// run is ptltest without the process exit: it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, err := parseFlags(args, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "ptltest:", err)
		return 2
	}
	exe, err := rankProgram()
	if err != nil {
		fmt.Fprintln(stderr, "ptltest: cannot find my own executable:", err)
		return 2
	}
	var cases []tests.Case
	for _, p := range c.paths {
		found, err := tests.Discover([]string{p}, c.np)
		if err != nil {
			fmt.Fprintln(stderr, "ptltest:", err)
			return 2
		}
		if len(found) == 0 {
			fmt.Fprintf(stderr, "ptltest: %s holds no test: no *.xml file in it or under it\n", p)
			return 2
		}
		cases = append(cases, found...)
	}
	opts := tests.Options{Exe: exe, Timeout: c.timeout, Verbose: c.verbose, Strict: c.strict}
	if c.netns != "" {
		opts.Wrap, opts.Network = netnsWrap(strings.Split(c.netns, ",")), "unix"
	}
	if c.verbose {
		opts.Log = stderr
	}
	start := time.Now()
	results := runAll(ctx, cases, c.jobs, opts, stdout)
	var pass, fail, skip int
	for _, r := range results {
		switch r.Status {
		case tests.Pass:
			pass++
		case tests.Fail:
			fail++
		case tests.Skip:
			skip++
		}
	}
	fmt.Fprintf(stdout, "%d passed, %d failed, %d skipped\n", pass, fail, skip)
	if c.junit != "" {
		if err := writeJUnit(c.junit, results, time.Since(start)); err != nil {
			fmt.Fprintln(stderr, "ptltest:", err)
			return 2
		}
	}
	if fail > 0 || ctx.Err() != nil {
		return 1
	}
	return 0
}

// runAll runs the cases with jobs workers and prints each result line in input order
// as soon as it and every earlier one are known.
func runAll(ctx context.Context, cases []tests.Case, jobs int, o tests.Options, out io.Writer) []tests.Result {
	results := make([]tests.Result, len(cases))
	done := make([]bool, len(cases))
	var mu sync.Mutex
	next := 0
	work := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				var r tests.Result
				if ctx.Err() != nil {
					r = tests.Result{Name: cases[i].Name, Status: tests.Fail, Reason: "interrupted", Ranks: cases[i].NP}
				} else {
					r = tests.RunCase(ctx, cases[i], o)
				}
				mu.Lock()
				results[i], done[i] = r, true
				for next < len(cases) && done[next] {
					printResult(out, results[next])
					next++
				}
				mu.Unlock()
			}
		}()
	}
	for i := range cases {
		work <- i
	}
	close(work)
	wg.Wait()
	return results
}

// printResult prints a test's warnings, then its result line.
func printResult(out io.Writer, r tests.Result) {
	for _, w := range r.Warnings {
		fmt.Fprintf(out, "WARN %s\n", w)
	}
	if r.Reason != "" {
		fmt.Fprintf(out, "%s %s (%s)\n", r.Status, r.Name, r.Reason)
	} else {
		fmt.Fprintf(out, "%s %s\n", r.Status, r.Name)
	}
}
