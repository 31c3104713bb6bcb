package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// results prints a transfer test's rows on rank 0: as an OSU-style table (two
// comment lines, a header, then one row per size as soon as it is measured), or,
// with -json, one JSON array of {"size": N, "<column>": V} at the end.
type results struct {
	w     io.Writer
	x     *xferTest
	print bool
	rows  []string
	err   error
}

func newResults(w io.Writer, x *xferTest, print bool) *results {
	r := &results{w: w, x: x, print: print}
	if print && !xferOpts.json {
		r.printf("# ptlbench %s: %s\n", x.name, x.about)
		r.printf("# soft provider, %d ranks, window %d\n", xferOpts.np, xferOpts.window)
		r.printf("%-10s %14s\n", "size", x.column)
	}
	return r
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
		r.printf("%-10d %14.2f\n", size, v)
		return
	}
	r.rows = append(r.rows, fmt.Sprintf(`{"size": %d, %s: %s}`, size, strconv.Quote(r.x.column),
		strconv.FormatFloat(v, 'f', 2, 64)))
}

// end prints the JSON array, if any, and reports a failed write.
func (r *results) end() error {
	if r.print && xferOpts.json {
		r.printf("[%s]\n", strings.Join(r.rows, ",\n "))
	}
	return r.err
}
