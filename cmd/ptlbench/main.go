// Command ptlbench runs goportals stress tests and benchmarks.
//
// Usage:
//
//	ptlbench [flags] TEST
//
// Run ptlbench -h for the flags and the list of tests.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"time"
)

// config holds the flags shared by every test.
type config struct {
	duration time.Duration
	threads  int
	seed     int64
	out      io.Writer
}

// test is one entry of the registry.
type test struct {
	name, summary string
	// flags, if set, registers test-specific flags.
	flags func(fs *flag.FlagSet)
	run   func(ctx context.Context, cfg config) error
}

var registry = map[string]*test{}

// register adds a test; tests call it from init in their own file.
func register(t *test) {
	if _, dup := registry[t.name]; dup {
		panic("ptlbench: test registered twice: " + t.name)
	}
	registry[t.name] = t
}

// errFailed marks a test that ran but found a problem (exit status 1).
var errFailed = errors.New("test failed")

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("ptlbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg := config{out: stdout}
	fs.DurationVar(&cfg.duration, "duration", 10*time.Second, "how long to run")
	fs.IntVar(&cfg.threads, "threads", 2, "worker goroutines per role")
	fs.Int64Var(&cfg.seed, "seed", time.Now().UnixNano(), "random seed")
	names := make([]string, 0, len(registry))
	for n, t := range registry {
		names = append(names, n)
		if t.flags != nil {
			t.flags(fs)
		}
	}
	compareFlags(fs)
	sort.Strings(names)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: ptlbench [flags] TEST\n       ptlbench -compare [-plot FILE.png] [flags]\n\ntests:\n")
		for _, n := range names {
			fmt.Fprintf(stderr, "  %-10s %s\n", n, registry[n].summary)
		}
		fmt.Fprintf(stderr, "\nflags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	t := compareTest
	if !compareRequested() || fs.NArg() != 0 {
		if fs.NArg() != 1 || compareRequested() {
			fs.Usage()
			return 2
		}
		var ok bool
		if t, ok = registry[fs.Arg(0)]; !ok {
			fmt.Fprintf(stderr, "ptlbench: unknown test %q\n", fs.Arg(0))
			fs.Usage()
			return 2
		}
	}
	if cfg.duration <= 0 || cfg.threads <= 0 {
		fmt.Fprintln(stderr, "ptlbench: -duration and -threads must be positive")
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := t.run(ctx, cfg); err != nil {
		fmt.Fprintf(stderr, "ptlbench %s: %v\n", t.name, err)
		if errors.Is(err, errFailed) {
			return 1
		}
		return 2
	}
	return 0
}
