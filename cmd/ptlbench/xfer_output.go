package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/goportals/goportals/internal/verbs"
)

// results prints a transfer test's rows on rank 0: as an OSU-style table (two
// comment lines, a header, then one row per size as soon as it is measured), or,
// with -json, one JSON array of {"size": N, "<column>": V} at the end.
type results struct {
	w      io.Writer
	x      *xferTest
	print  bool
	path   func() string // the path that carried the test (shm, tcp), known once traffic ran
	header bool
	rows   []string
	err    error
}

func newResults(w io.Writer, x *xferTest, print bool, path func() string) *results {
	return &results{w: w, x: x, print: print, path: path}
}

// pathName is the path that carried the test, or "unknown".
func (r *results) pathName() string {
	if p := r.path(); p != "" {
		return p
	}
	return "unknown"
}

// head prints the table's header once the first size was measured (connections
// open on first use, so the path is known only then).
func (r *results) head() {
	if r.header || !r.print || xferOpts.json {
		return
	}
	r.header = true
	r.printf("# ptlbench %s: %s\n", r.x.name, r.x.about)
	r.printf("# %s provider, path %s, %d ranks, window %d\n", provider(), r.pathName(), xferOpts.np, xferOpts.window)
	r.printf("%-10s %14s\n", "size", r.x.column)
}

func (r *results) printf(format string, args ...any) {
	if r.err == nil {
		_, r.err = fmt.Fprintf(r.w, format, args...)
	}
}

// row records the value measured for size.
func (r *results) row(size int, v float64) {
	if !r.print {
		return
	}
	if !xferOpts.json {
		r.head()
		r.printf("%-10d %14.2f\n", size, v)
		return
	}
	r.rows = append(r.rows, fmt.Sprintf(`{"size": %d, %s: %s, "path": %s}`, size, strconv.Quote(r.x.column),
		strconv.FormatFloat(v, 'f', 2, 64), strconv.Quote(r.pathName())))
}

// end prints the JSON array, if any, and reports a failed write.
func (r *results) end() error {
	r.head()
	if r.print && xferOpts.json {
		r.printf("[%s]\n", strings.Join(r.rows, ",\n "))
	}
	return r.err
}

// provider names the verbs provider the engine chose (PTL_PROVIDER).
func provider() string {
	p, err := verbs.Choose()
	if err != nil {
		return "unknown"
	}
	return p.Name()
}
