package tests

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/goportals/goportals/portals"
	"github.com/goportals/goportals/portals/ptl"
)

// Runtime is what the interpreter needs from the job launcher: rank, size,
// key-value exchange and a barrier. internal/bootstrap's Bootstrap satisfies it.
// Portals itself (ptl_init) joins the job on its own, through the launcher's
// shared bootstrap connection (bootstrap.Shared), so that under the launcher rt
// should be that same shared connection.
type Runtime interface {
	Rank() int
	Size() int
	Put(key string, value []byte) error
	Fence(ctx context.Context) error
	Get(ctx context.Context, rank int, key string) ([]byte, error)
	Barrier(ctx context.Context) error
}

// interp runs one script in one process (one rank of the job).
type interp struct {
	ctx  context.Context
	rt   Runtime
	path string
	log  io.Writer // verbose trace, or nil

	mu    sync.Mutex
	prefs int // successful ptl/ptl_init calls (ptl.Init) not matched by a ptl.Fini
}

// Run interprets the script in this process, rank rt.Rank() of rt.Size(), until it
// ends or ctx does. It returns nil when every call and check matched, a skip when
// the script uses a construct with no Go counterpart, or the first failure. Calls
// that panic are caught and reported as failures. log, if not nil, receives a trace.
func Run(ctx context.Context, s *Script, rt Runtime, log io.Writer) (err error) {
	in := &interp{ctx: ctx, rt: rt, path: s.Path, log: log}
	defer in.closeAll()
	defer func() {
		if v := recover(); v != nil {
			err = &failError{msg: fmt.Sprintf("interpreter panic (a runner bug): %v at %s", v, panicSite(string(debug.Stack())))}
		}
	}()
	r := defaultRecord()
	r.rank, r.size = rt.Rank(), rt.Size()
	return in.walk(r, []*Node{s.Root})
}

// Outcome turns the error of Run into a status and reason.
func Outcome(err error) (Status, string) {
	var se *skipError
	switch {
	case err == nil:
		return Pass, ""
	case errors.As(err, &se):
		return Skip, se.Error()
	}
	return Fail, err.Error()
}

// IsPeerFailure reports whether err is a failure caused by another rank leaving the
// job, so that the other rank's own failure is the one to report.
func IsPeerFailure(err error) bool {
	var fe *failError
	return errors.As(err, &fe) && fe.peer
}

// closeAll ends the Inits the script left open, so that the library's process is
// finalized (with every NI still open) when the script ends.
func (in *interp) closeAll() {
	in.mu.Lock()
	n := in.prefs
	in.prefs = 0
	in.mu.Unlock()
	for ; n > 0; n-- {
		protect(func() error { ptl.Fini(); return nil })
	}
}

func (in *interp) tracef(n *Node, format string, args ...any) {
	if in.log != nil {
		fmt.Fprintf(in.log, "rank %d line %d <%s>: %s\n", in.rt.Rank(), n.Line, n.Name, fmt.Sprintf(format, args...))
	}
}

// walk runs a list of sibling elements on the record r (the record of their parent).
func (in *interp) walk(r *record, nodes []*Node) error {
	for _, n := range nodes {
		if err := in.ctx.Err(); err != nil {
			return &failError{line: n.Line, msg: "test deadline passed before <" + n.Name + ">"}
		}
		if err := in.node(r, n); err != nil {
			return atLine(n, err)
		}
	}
	return nil
}

// node runs one element.
func (in *interp) node(r *record, n *Node) error {
	// Elements that work on the parent's record.
	switch n.Name {
	case "set":
		return in.applyAttrs(r, n)
	case "check":
		return in.check(r, n)
	case "if":
		ok, err := in.test(r, n)
		if err != nil {
			return err
		}
		r.cond = ok
		if ok {
			return in.walk(r, n.Children)
		}
		return nil
	case "else":
		if !r.cond {
			return in.walk(r, n.Children)
		}
		return nil
	case "arg_check":
		return in.walk(r, n.Children)
	case "ifdef":
		// As the reference: the children run when every attribute names something the
		// interpreter knows.
		for _, a := range n.Attrs {
			if _, ok := attributes[a.Name.Local]; !ok || a.Name.Space != "" {
				in.tracef(n, "%s not defined: children skipped", a.Name.Local)
				return nil
			}
		}
		return in.walk(r, n.Children)
	case "desc", "comment", "subtest":
		// subtest children are never run by the reference interpreter.
		return nil
	case "barrier":
		return in.barrier(n)
	}

	r = r.push(n.Name)
	if err := in.applyAttrs(r, n); err != nil {
		return err
	}
	switch n.Name {
	case "test":
		return in.walk(r, n.Children)
	case "repeat":
		for i := int64(0); i < r.count; i++ {
			if err := in.walk(r, n.Children); err != nil {
				return err
			}
		}
		return nil
	case "threads":
		return in.threads(r, n)
	case "msleep":
		if err := sleepCtx(in.ctx, time.Duration(r.count)*time.Millisecond); err != nil {
			return failf(n, "test deadline passed while sleeping")
		}
		return in.walk(r, n.Children)
	case "get_time":
		start := time.Now()
		err := in.walk(r, n.Children)
		in.tracef(n, "time = %v", time.Since(start))
		return err
	case "ompi_rt":
		if err := in.ompiRT(r, n); err != nil {
			return err
		}
		return in.walk(r, n.Children)
	}
	if sc, ok := scoped[n.Name]; ok {
		return in.scope(r, n, sc)
	}
	call, ok := calls[n.Name]
	if !ok {
		return failf(n, "element has no implementation")
	}
	if err := call(in, r, n); err != nil {
		return err
	}
	return in.walk(r, n.Children)
}

// scopeOps are the allocate and free calls of a scoped element.
type scopeOps struct {
	alloc, free func(in *interp, r *record, n *Node) error
}

// scoped maps the scoped elements (count= of them are allocated, the children run,
// then they are freed in reverse order).
var scoped map[string]scopeOps

func init() {
	scoped = map[string]scopeOps{
		"ptl":    {callInit, callFini},
		"ptl_ni": {callNIInit, callNIFini},
		"ptl_pt": {callPTAlloc, callPTFree},
		"ptl_md": {callMDBind, callMDRelease},
		"ptl_le": {callLEAppend, callLEUnlink},
		"ptl_me": {callMEAppend, callMEUnlink},
		"ptl_eq": {callEQAlloc, callEQFree},
		"ptl_ct": {callCTAlloc, callCTFree},
	}
}

func (in *interp) scope(r *record, n *Node, sc scopeOps) error {
	if n.Name == "ptl" {
		// ptl takes no count in the reference: one Init, the children, one Fini.
		if err := sc.alloc(in, r, n); err != nil {
			return err
		}
		if err := in.walk(r, n.Children); err != nil {
			return err
		}
		return sc.free(in, r, n)
	}
	recs := []*record{r}
	for i := int64(1); i < r.count; i++ {
		if err := sc.alloc(in, r, n); err != nil {
			return err
		}
		r = r.push(n.Name)
		if err := in.applyAttrs(r, n); err != nil {
			return err
		}
		recs = append(recs, r)
	}
	if err := sc.alloc(in, r, n); err != nil {
		return err
	}
	if err := in.walk(r, n.Children); err != nil {
		return err
	}
	for i := len(recs) - 1; i >= 0; i-- {
		if err := sc.free(in, recs[i], n); err != nil {
			return err
		}
	}
	return nil
}

// threads runs the children in count goroutines, each on its own copy of the record
// with $thread_id set, and returns the first failure.
func (in *interp) threads(r *record, n *Node) error {
	errs := make([]error, r.count)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := int64(0); i < r.count; i++ {
		c := *r
		c.threadID = i
		wg.Add(1)
		go func(i int64, c *record) {
			defer wg.Done()
			defer func() {
				if v := recover(); v != nil {
					errs[i] = failf(n, "thread %d: interpreter panic (a runner bug): %v at %s", i, v, panicSite(string(debug.Stack())))
				}
			}()
			<-start
			errs[i] = in.walk(c, n.Children)
		}(i, &c)
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// barrier waits for every rank of the job.
func (in *interp) barrier(n *Node) error {
	if err := in.rt.Barrier(in.ctx); err != nil {
		return &failError{line: n.Line, msg: "barrier: " + err.Error(), peer: isPeerLoss(err)}
	}
	return nil
}

func isPeerLoss(err error) bool {
	s := err.Error()
	return strings.Contains(s, "peer rank lost") || strings.Contains(s, "job aborted") ||
		strings.Contains(s, "launcher lost")
}

// ompiRT is the reference's ompi_rt element: it records the rank and job size and,
// when the record has an NI, exchanges the physical ids of every rank through the
// launcher so that logical NIs created inside get that map.
func (in *interp) ompiRT(r *record, n *Node) error {
	r.rank, r.size = in.rt.Rank(), in.rt.Size()
	ni, err := r.niH.ni()
	if err != nil || ni == nil {
		return err
	}
	if r.desiredMap != nil {
		return nil
	}
	id, err := ni.PhysID()
	if err != nil {
		return failf(n, "PtlGetPhysId: %v", err)
	}
	key := "ptltest.phys"
	val := []byte(fmt.Sprintf("%d:%d", id.NID, id.PID))
	if err := in.rt.Put(key, val); err != nil {
		return failf(n, "publishing the physical id: %v", err)
	}
	if err := in.rt.Fence(in.ctx); err != nil {
		return &failError{line: n.Line, msg: "fence: " + err.Error(), peer: isPeerLoss(err)}
	}
	m := make([]portals.ProcessID, in.rt.Size())
	for rk := range m {
		v, err := in.rt.Get(in.ctx, rk, key)
		if err != nil {
			return &failError{line: n.Line, msg: fmt.Sprintf("physical id of rank %d: %v", rk, err), peer: isPeerLoss(err)}
		}
		var nid, pid uint32
		if _, err := fmt.Sscanf(string(v), "%d:%d", &nid, &pid); err != nil {
			return failf(n, "physical id of rank %d: %q", rk, v)
		}
		m[rk] = portals.ProcessID{NID: portals.NID(nid), PID: portals.PID(pid)}
	}
	r.desiredMap = m
	return nil
}
