package tests

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"

	"github.com/goportals/goportals/portals"
	"github.com/goportals/goportals/portals/ptl"
)

// callFunc makes the call of a single-call element (and of the allocate or free half
// of a scoped one) from the record, compares the return code with ret=, and stores
// what the call returned in the record.
type callFunc func(in *interp, r *record, n *Node) error

// calls maps the single-call elements.
var calls map[string]callFunc

func init() {
	calls = map[string]callFunc{
		"ptl_init": callInit, "ptl_fini": callFini,
		"ptl_ni_init": callNIInit, "ptl_ni_fini": callNIFini, "ptl_ni_status": callNIStatus,
		"ptl_ni_handle": callNIHandle, "ptl_get_id": callGetID, "ptl_get_uid": callGetUID,
		"ptl_get_map": callGetMap, "ptl_set_map": callSetMap, "ptl_handle_is_equal": callHandleIsEqual,
		"ptl_start_bundle": callStartBundle, "ptl_end_bundle": callEndBundle,
		"ptl_pt_alloc": callPTAlloc, "ptl_pt_free": callPTFree,
		"ptl_pt_disable": callPTDisable, "ptl_pt_enable": callPTEnable,
		"ptl_eq_alloc": callEQAlloc, "ptl_eq_free": callEQFree, "ptl_eq_get": callEQGet,
		"ptl_eq_wait": callEQWait, "ptl_eq_poll": callEQPoll,
		"ptl_ct_alloc": callCTAlloc, "ptl_ct_free": callCTFree, "ptl_ct_get": callCTGet,
		"ptl_ct_wait": callCTWait, "ptl_ct_poll": callCTPoll, "ptl_ct_set": callCTSet,
		"ptl_ct_inc": callCTInc, "ptl_ct_cancel_trig": callCTCancelTrig,
		"ptl_md_bind": callMDBind, "ptl_md_release": callMDRelease,
		"ptl_le_append": callLEAppend, "ptl_le_unlink": callLEUnlink, "ptl_le_search": callLESearch,
		"ptl_me_append": callMEAppend, "ptl_me_unlink": callMEUnlink, "ptl_me_search": callMESearch,
		"ptl_put": callPut, "ptl_get": callGet, "ptl_atomic": callAtomic, "ptl_atomic_sync": callAtomicSync,
		"ptl_fetch": callFetch, "ptl_swap": callSwap,
		"ptl_trig_put": callTrigPut, "ptl_trig_get": callTrigGet, "ptl_trig_atomic": callTrigAtomic,
		"ptl_trig_fetch": callTrigFetch, "ptl_trig_swap": callTrigSwap,
		"ptl_trig_ct_inc": callTrigCTInc, "ptl_trig_ct_set": callTrigCTSet,
	}
}

// panicError is a call into portals that panicked: a bug in the library, since bad
// input must get a typed error.
type panicError struct {
	val   any
	where string
}

func (e *panicError) Error() string {
	return fmt.Sprintf("portals panicked: %v (at %s)", e.val, e.where)
}

// protect runs f and turns a panic into a panicError naming the innermost frame of
// package portals (or below it) that panicked.
func protect(f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{val: v, where: panicSite(string(debug.Stack()))}
		}
	}()
	return f()
}

// panicSite finds the frame that panicked in a stack trace taken in a deferred
// recover: the first goportals frame after the runtime's panic frame, named by its
// package directory and file ("portals/ops.go:39").
func panicSite(stack string) string {
	lines := strings.Split(stack, "\n")
	start := 0
	for i, l := range lines {
		if strings.HasPrefix(l, "panic(") {
			start = i + 1
		}
	}
	for i := start; i+1 < len(lines); i++ {
		fn := lines[i]
		k := strings.Index(fn, "goportals/goportals/")
		if k < 0 {
			continue
		}
		loc := strings.TrimSpace(lines[i+1])
		// Name the file relative to the module: the package directory of the
		// function ("portals", "internal/verbs/soft") and the file name.
		pkg := fn[k+len("goportals/goportals/"):]
		if j := strings.Index(pkg, "."); j >= 0 {
			pkg = pkg[:j]
		}
		if j := strings.LastIndex(loc, "/"+pkg+"/"); j >= 0 {
			loc = loc[j+1:]
		}
		if j := strings.LastIndex(loc, " +0x"); j >= 0 {
			loc = loc[:j]
		}
		return loc
	}
	return "unknown"
}

func errnoName(e portals.Errno) string {
	if e == errInvalidRet {
		return "INVALID"
	}
	return strings.TrimPrefix(e.Error(), "PTL_")
}

// expect compares the code of err with the record's ret=.
func (in *interp) expect(r *record, n *Node, op string, err error) error {
	var pe *panicError
	if errors.As(err, &pe) {
		return failf(n, "%s: %v", op, pe)
	}
	var se *skipError
	if errors.As(err, &se) {
		return err
	}
	got := portals.ErrnoOf(err)
	r.err = got // what err= in check and if compares, in this element's children
	if got == r.ret {
		in.tracef(n, "%s -> %s", op, errnoName(got))
		return nil
	}
	msg := fmt.Sprintf("%s returned %s, want %s", op, errnoName(got), errnoName(r.ret))
	if err != nil {
		msg += " (" + err.Error() + ")"
	}
	return failf(n, "%s", msg)
}

// waitCtx bounds a poll by the record's time= (milliseconds) and the test deadline.
func (in *interp) waitCtx(r *record) (context.Context, context.CancelFunc) {
	return context.WithTimeout(in.ctx, time.Duration(r.timeout)*time.Millisecond)
}

// mirrorTimeout returns the record's time= as PtlEQPoll's and PtlCTPoll's timeout in
// milliseconds, and whether the poll may be made through the mirror with it: only a
// finite timeout that ends before the test deadline, since the mirror's poll knows
// no deadline but its own. Otherwise the runner polls with a context that carries
// both (waitCtx).
func (in *interp) mirrorTimeout(r *record) (uint32, bool) {
	if r.timeout < 0 || r.timeout >= int64(ptl.TimeForever) {
		return 0, false
	}
	d := time.Duration(r.timeout) * time.Millisecond
	if dl, ok := in.ctx.Deadline(); ok && time.Until(dl) <= d {
		return 0, false
	}
	return uint32(r.timeout), true
}

// retryWhile repeats f while it returns code, yielding between tries, until the test
// deadline (the reference loops the same way on PT_IN_USE and IN_USE when freeing).
func (in *interp) retryWhile(code portals.Errno, tries int, pause time.Duration, f func() error) error {
	for i := 0; ; i++ {
		err := protect(f)
		if portals.ErrnoOf(err) != code || (tries > 0 && i+1 >= tries) || in.ctx.Err() != nil {
			return err
		}
		if pause < 100*time.Microsecond {
			pause = 100 * time.Microsecond
		}
		time.Sleep(pause)
	}
}

// callID is PtlGetId, protected.
func (in *interp) callID(ni *portals.NI) (id portals.ProcessID, err error) {
	err = protect(func() error {
		var e error
		id, e = ptl.GetId(ni)
		return e
	})
	return id, err
}
