// Command halo runs a 2-D Jacobi relaxation on shmem with halo exchange: the
// global grid is split into blocks over a px × py grid of PEs; every step each
// PE puts its edge rows straight into its neighbours' ghost rows and its edge
// columns (packed) into their receive buffers, completes them with a barrier,
// and updates its block. The top edge of the grid is held at 1, the other
// edges at 0. With -verify (the default) PE 0 gathers the grid with gets and
// compares it, bit for bit, with the same relaxation run on one PE.
//
//	ptlrun -n 4 halo -nx 256 -ny 256 -iters 200
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/goportals/goportals/shmem"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

type options struct {
	nx, ny, iters int
	verify        bool
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("halo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.IntVar(&o.nx, "nx", 128, "grid rows (interior)")
	fs.IntVar(&o.ny, "ny", 128, "grid columns (interior)")
	fs.IntVar(&o.iters, "iters", 100, "relaxation steps")
	fs.BoolVar(&o.verify, "verify", true, "compare with the same relaxation on one PE")
	timeout := fs.Duration("timeout", 5*time.Minute, "give up after this long")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.nx < 1 || o.ny < 1 || o.iters < 0 {
		fmt.Fprintln(stderr, "halo: -nx and -ny must be positive, -iters not negative")
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	w, err := shmem.Init(ctx, &shmem.Options{HeapSize: 3*(o.nx+2)*(o.ny+2)*8 + 1<<20})
	if err != nil {
		fmt.Fprintln(stderr, "halo:", err)
		return 1
	}
	res, err := relax(ctx, w, o)
	err = errors.Join(err, w.Close(ctx))
	if err != nil {
		fmt.Fprintf(stderr, "halo: PE %d: %v\n", w.MyPE(), err)
		return 1
	}
	if w.MyPE() == 0 {
		fmt.Fprintf(stdout, "grid %d x %d over %d x %d PEs, %d steps: %.6f s, %.3f us per step\n",
			o.nx, o.ny, res.px, res.py, o.iters, res.seconds, res.seconds/float64(max(o.iters, 1))*1e6)
		fmt.Fprintf(stdout, "checksum %.12g\n", res.sum)
		if o.verify {
			if res.mismatches == 0 {
				fmt.Fprintln(stdout, "verification: identical to the one-PE relaxation: PASSED")
			} else {
				fmt.Fprintf(stdout, "verification: %d points differ from the one-PE relaxation: FAILED\n", res.mismatches)
				return 1
			}
		}
	}
	return 0
}

// decomp is the split of the grid: PE (r, c) of a px × py grid owns rows
// [r0, r0+lx) and columns [c0, c0+ly).
type decomp struct {
	px, py, r, c, lx, ly, r0, c0 int
}

// split divides n into p parts, the first n%p one larger: part i's start and length.
func split(n, p, i int) (start, length int) {
	q, rem := n/p, n%p
	return i*q + min(i, rem), q + btoi(i < rem)
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func newDecomp(n, me, nx, ny int) (decomp, error) {
	px := int(math.Sqrt(float64(n)))
	for n%px != 0 {
		px--
	}
	d := decomp{px: px, py: n / px, r: me / (n / px), c: me % (n / px)}
	if d.px > nx || d.py > ny {
		return d, fmt.Errorf("grid %d x %d too small for %d x %d PEs", nx, ny, d.px, d.py)
	}
	d.r0, d.lx = split(nx, d.px, d.r)
	d.c0, d.ly = split(ny, d.py, d.c)
	return d, nil
}

// pe returns the PE at (r, c) of the process grid, or -1 outside it.
func (d decomp) pe(r, c int) int {
	if r < 0 || r >= d.px || c < 0 || c >= d.py {
		return -1
	}
	return r*d.py + c
}

type result struct {
	px, py     int
	seconds    float64
	sum        float64
	mismatches int
}

// step is one Jacobi update of the interior of a (lx+2) × (ly+2) block with row
// length wd, from cur into next.
func step(cur, next []float64, lx, ly, wd int) {
	for i := 1; i <= lx; i++ {
		for j := 1; j <= ly; j++ {
			k := i*wd + j
			next[k] = 0.25 * (cur[k-wd] + cur[k+wd] + cur[k-1] + cur[k+1])
		}
	}
}

// boundary sets the fixed values of a block's ghost cells that lie on the
// grid's edge: the top edge is 1, the others 0.
func boundary(a []float64, d decomp, wd int) {
	if d.r == 0 {
		for j := 0; j < wd; j++ {
			a[j] = 1
		}
	}
}

func relax(ctx context.Context, w *shmem.World, o options) (result, error) {
	d, err := newDecomp(w.NPEs(), w.MyPE(), o.nx, o.ny)
	if err != nil {
		return result{}, err
	}
	res := result{px: d.px, py: d.py}
	// Every PE allocates the largest block (symmetric objects have one size);
	// the row length wd is the same everywhere.
	_, maxLx := split(o.nx, d.px, 0)
	_, maxLy := split(o.ny, d.py, 0)
	wd := maxLy + 2
	cells := (maxLx + 2) * wd
	var bufs [2]shmem.Sym[float64]
	for i := range bufs {
		if bufs[i], err = shmem.Calloc[float64](ctx, w, cells); err != nil {
			return res, err
		}
		boundary(bufs[i].Local(), d, wd)
	}
	// Column receive buffers, double-buffered by step parity: west and east.
	recv, err := shmem.Calloc[float64](ctx, w, 4*maxLx)
	if err != nil {
		return res, err
	}
	send, err := shmem.Calloc[float64](ctx, w, 2*maxLx)
	if err != nil {
		return res, err
	}
	north, south := d.pe(d.r-1, d.c), d.pe(d.r+1, d.c)
	west, east := d.pe(d.r, d.c-1), d.pe(d.r, d.c+1)
	c := w.Ctx()
	if err := w.BarrierAll(ctx); err != nil {
		return res, err
	}
	start := time.Now()
	for it := 0; it < o.iters; it++ {
		cur, next := bufs[it%2], bufs[(it+1)%2]
		a := cur.Local()
		par := (it % 2) * 2 * maxLx
		// Rows go straight into the neighbours' ghost rows of cur.
		if north >= 0 {
			_, nlx := split(o.nx, d.px, d.r-1)
			if err := shmem.PutNBI(ctx, c, cur.Slice((nlx+1)*wd+1, (nlx+1)*wd+1+d.ly), a[wd+1:wd+1+d.ly], north); err != nil {
				return res, err
			}
		}
		if south >= 0 {
			if err := shmem.PutNBI(ctx, c, cur.Slice(1, 1+d.ly), a[d.lx*wd+1:d.lx*wd+1+d.ly], south); err != nil {
				return res, err
			}
		}
		// Columns are packed and put into the neighbours' receive buffers: my
		// west column is my west neighbour's east input, and so on.
		s := send.Local()
		if west >= 0 {
			for i := 0; i < d.lx; i++ {
				s[i] = a[(i+1)*wd+1]
			}
			if err := shmem.PutNBI(ctx, c, recv.Slice(par+maxLx, par+maxLx+d.lx), s[:d.lx], west); err != nil {
				return res, err
			}
		}
		if east >= 0 {
			for i := 0; i < d.lx; i++ {
				s[maxLx+i] = a[(i+1)*wd+d.ly]
			}
			if err := shmem.PutNBI(ctx, c, recv.Slice(par, par+d.lx), s[maxLx:maxLx+d.lx], east); err != nil {
				return res, err
			}
		}
		if err := w.BarrierAll(ctx); err != nil {
			return res, err
		}
		r := recv.Local()
		if west >= 0 {
			for i := 0; i < d.lx; i++ {
				a[(i+1)*wd] = r[par+i]
			}
		}
		if east >= 0 {
			for i := 0; i < d.lx; i++ {
				a[(i+1)*wd+d.ly+1] = r[par+maxLx+i]
			}
		}
		step(a, next.Local(), d.lx, d.ly, wd)
	}
	if err := w.BarrierAll(ctx); err != nil {
		return res, err
	}
	res.seconds = time.Since(start).Seconds()
	final := bufs[o.iters%2]
	if w.MyPE() == 0 {
		grid, err := gather(ctx, w, final, o, d.px, d.py, wd)
		if err != nil {
			return res, err
		}
		for _, v := range grid {
			res.sum += v
		}
		if o.verify {
			res.mismatches = compareSerial(grid, o)
		}
	}
	if err := w.BarrierAll(ctx); err != nil {
		return res, err
	}
	return res, errors.Join(shmem.Free(ctx, send), shmem.Free(ctx, recv), shmem.Free(ctx, bufs[1]), shmem.Free(ctx, bufs[0]))
}

// gather reads every PE's block interior, row by row, into an nx × ny grid.
func gather(ctx context.Context, w *shmem.World, a shmem.Sym[float64], o options, px, py, wd int) ([]float64, error) {
	grid := make([]float64, o.nx*o.ny)
	for r := 0; r < px; r++ {
		r0, lx := split(o.nx, px, r)
		for cc := 0; cc < py; cc++ {
			c0, ly := split(o.ny, py, cc)
			pe := r*py + cc
			for i := 0; i < lx; i++ {
				row := grid[(r0+i)*o.ny+c0 : (r0+i)*o.ny+c0+ly]
				if err := shmem.Get(ctx, w.Ctx(), row, a.Slice((i+1)*wd+1, (i+1)*wd+1+ly), pe); err != nil {
					return nil, err
				}
			}
		}
	}
	return grid, nil
}

// compareSerial runs the relaxation on the whole grid in this process and
// counts the points that differ from grid.
func compareSerial(grid []float64, o options) int {
	wd := o.ny + 2
	var bufs [2][]float64
	for i := range bufs {
		bufs[i] = make([]float64, (o.nx+2)*wd)
		for j := 0; j < wd; j++ {
			bufs[i][j] = 1
		}
	}
	for it := 0; it < o.iters; it++ {
		step(bufs[it%2], bufs[(it+1)%2], o.nx, o.ny, wd)
	}
	final := bufs[o.iters%2]
	bad := 0
	for i := 0; i < o.nx; i++ {
		for j := 0; j < o.ny; j++ {
			if final[(i+1)*wd+j+1] != grid[i*o.ny+j] {
				bad++
			}
		}
	}
	return bad
}
