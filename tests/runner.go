package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goportals/goportals/internal/bootstrap"
)

// Case is one test script to run.
type Case struct {
	Path string // the file
	Name string // how results name it
	NP   int    // processes to run it on
}

var npDir = regexp.MustCompile(`^test_n([0-9]+)$`)

// ProcessCount returns the process count of the script at path: N for the nearest
// enclosing folder named test_nN, else 1.
func ProcessCount(path string) int {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
		if m := npDir.FindStringSubmatch(filepath.Base(d)); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil && n >= 1 {
				return n
			}
		}
		if p := filepath.Dir(d); p == d {
			return 1
		}
	}
}

// Discover lists the scripts of paths: a file is taken as is, a folder is searched
// recursively for *.xml files (in lexical order). np > 0 overrides the process count.
func Discover(paths []string, np int) ([]Case, error) {
	var cases []Case
	add := func(path, name string) {
		c := Case{Path: path, Name: name, NP: np}
		if np <= 0 {
			c.NP = ProcessCount(path)
		}
		cases = append(cases, c)
	}
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			add(p, p)
			continue
		}
		// A symlinked folder is walked through its target (WalkDir does not follow
		// a symlink at the root); names stay under the path as given.
		root, err := filepath.EvalSymlinks(p)
		if err != nil {
			return nil, err
		}
		var found []string
		err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(d.Name(), ".xml") {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(found)
		for _, f := range found {
			rel, err := filepath.Rel(root, f)
			if err != nil {
				rel = f
			}
			add(f, rel)
		}
	}
	return cases, nil
}

// The child protocol: the runner starts each rank of a test as its own executable
// with these variables, and the rank prints one result line.
const (
	// EnvChild holds the script a child process runs (one rank of one test).
	EnvChild = "PTLTEST_CHILD"
	// EnvDeadline holds the child's deadline in Unix nanoseconds.
	EnvDeadline = "PTLTEST_DEADLINE"
	// EnvVerbose asks the child for a trace on its standard error.
	EnvVerbose = "PTLTEST_VERBOSE"

	resultTag = "PTLTEST-RESULT "
)

// rankResult is what one rank reports.
type rankResult struct {
	Rank   int    `json:"rank"`
	Status Status `json:"status"`
	Reason string `json:"reason,omitempty"`
	Peer   bool   `json:"peer,omitempty"`
}

// IsChild reports whether this process was started by the runner as one rank of a
// test; the program should then call ChildMain and exit with its status.
func IsChild() bool { return os.Getenv(EnvChild) != "" }

// ChildMain runs one rank of the test named by the environment: it joins the job
// through the launcher's shared bootstrap connection, interprets the script, prints
// its result line on out and returns the exit status (0 pass or skip, 1 failure).
func ChildMain(out io.Writer) int {
	path := os.Getenv(EnvChild)
	ctx := context.Background()
	if ns, err := strconv.ParseInt(os.Getenv(EnvDeadline), 10, 64); err == nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, time.Unix(0, ns))
		defer cancel()
	}
	var log io.Writer
	if os.Getenv(EnvVerbose) != "" {
		log = os.Stderr
	}
	res := rankResult{}
	// The launcher admits one connection per rank: the runner's runtime and
	// Portals' own join (ptl.Init) share it.
	b, release, err := bootstrap.Shared(ctx)
	if err != nil {
		res.Status, res.Reason = Fail, "bootstrap: "+err.Error()
	} else {
		res.Rank = b.Rank()
		res.Status, res.Reason, res.Peer = runChild(ctx, path, b, log)
	}
	line, _ := json.Marshal(res)
	fmt.Fprintf(out, "%s%s\n", resultTag, line)
	if release != nil {
		release()
	}
	if res.Status == Fail {
		return 1
	}
	return 0
}

func runChild(ctx context.Context, path string, b bootstrap.Bootstrap, log io.Writer) (Status, string, bool) {
	s, err := ParseFile(path)
	if err != nil {
		return Fail, err.Error(), false
	}
	err = Run(ctx, s, b, log)
	st, reason := Outcome(err)
	if st != Pass {
		reason = fmt.Sprintf("%s: %s", path, reason)
	}
	return st, reason, IsPeerFailure(err)
}

// Options configure RunCase.
type Options struct {
	// Exe is the program that runs one rank (it calls ChildMain when IsChild).
	Exe string
	// Timeout bounds one test (all its ranks); a test still running is a failure.
	Timeout time.Duration
	// Verbose passes a trace of every call and check through to Log.
	Verbose bool
	// Log receives the ranks' standard error (traces and crashes), or nil.
	Log io.Writer
	// Strict fails a script that uses an unknown symbol (Script.UnknownSymbols)
	// without running it; otherwise the symbol reads as the reference harness reads
	// it and the result carries a warning.
	Strict bool
	// Wrap, when set, is a command every rank runs under, its program appended
	// (for example one that enters a network namespace chosen by PTL_RANK).
	Wrap []string
	// Network is the bootstrap server's network, "tcp" (default) or "unix" (which
	// reaches ranks in other network namespaces of this machine).
	Network string
}

// lockedBuffer collects the ranks' output lines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// RunCase runs one test in fresh processes (c.NP ranks under the launcher) and
// returns its result. A hang past the timeout, a crash or a rank exiting without a
// result is a failure.
func RunCase(ctx context.Context, c Case, o Options) Result {
	start := time.Now()
	res := Result{Name: c.Name, Ranks: c.NP}
	s, err := ParseFile(c.Path)
	if err != nil {
		// A broken script fails here, with its file and line, without starting anything.
		res.Status, res.Reason = Fail, err.Error()
		res.Duration = time.Since(start)
		return res
	}
	res.Warnings = s.UnknownSymbols()
	if o.Strict && len(res.Warnings) > 0 {
		res.Status = Fail
		res.Reason = res.Warnings[0].String() + " (strict: an unknown symbol fails the test)"
		if n := len(res.Warnings) - 1; n > 0 {
			res.Reason += fmt.Sprintf(", and %d more", n)
		}
		res.Duration = time.Since(start)
		return res
	}
	deadline := start.Add(o.Timeout)
	childDeadline := start.Add(o.Timeout * 9 / 10)
	env := append(os.Environ(), EnvChild+"="+c.Path, EnvDeadline+"="+strconv.FormatInt(childDeadline.UnixNano(), 10))
	if o.Verbose {
		env = append(env, EnvVerbose+"=1")
	}
	var stdout, stderr lockedBuffer
	argv := append(append([]string(nil), o.Wrap...), o.Exe)
	_, err = bootstrap.Launch(ctx, bootstrap.LaunchConfig{
		N: c.NP, Argv: argv, Env: env, Stdout: &stdout, Stderr: &stderr,
		Prefix: c.NP > 1, Timeout: time.Until(deadline), Grace: time.Second, Network: o.Network,
	})
	res.Duration = time.Since(start)
	ranks := parseResults(stdout.String())
	if o.Log != nil && stderr.String() != "" {
		fmt.Fprintf(o.Log, "--- %s (stderr)\n%s", c.Name, stderr.String())
	}
	res.Status, res.Reason = combine(c, ranks, err, stderr.String(), o.Timeout)
	return res
}

func parseResults(out string) []rankResult {
	var rs []rankResult
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		i := strings.Index(line, resultTag)
		if i < 0 {
			continue
		}
		var r rankResult
		if json.Unmarshal([]byte(line[i+len(resultTag):]), &r) == nil {
			rs = append(rs, r)
		}
	}
	return rs
}

// combine makes one result of the ranks': the first failure that is not caused by a
// peer leaving, else any failure, else a skip, else a pass when every rank reported.
func combine(c Case, ranks []rankResult, jobErr error, stderr string, timeout time.Duration) (Status, string) {
	prefix := func(r rankResult) string {
		if c.NP > 1 {
			return fmt.Sprintf("rank %d: ", r.Rank)
		}
		return ""
	}
	for _, r := range ranks {
		if r.Status == Fail && !r.Peer {
			return Fail, prefix(r) + r.Reason
		}
	}
	if errors.Is(jobErr, bootstrap.ErrTimeout) {
		return Fail, fmt.Sprintf("%s: timed out after %v%s", filepath.Base(c.Path), timeout, tail(stderr))
	}
	for _, r := range ranks {
		if r.Status == Fail {
			return Fail, prefix(r) + r.Reason
		}
	}
	if jobErr != nil {
		return Fail, fmt.Sprintf("%s: %v%s", filepath.Base(c.Path), jobErr, tail(stderr))
	}
	if len(ranks) != c.NP {
		return Fail, fmt.Sprintf("%s: %d of %d ranks reported a result%s", filepath.Base(c.Path), len(ranks), c.NP, tail(stderr))
	}
	for _, r := range ranks {
		if r.Status == Skip {
			return Skip, prefix(r) + r.Reason
		}
	}
	return Pass, ""
}

// tail returns the last lines of a rank's standard error, for a crash report.
func tail(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	if len(lines) > 6 {
		lines = lines[len(lines)-6:]
	}
	return " [stderr: " + strings.Join(lines, " | ") + "]"
}
