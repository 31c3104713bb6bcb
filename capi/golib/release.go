package main

/*
#include <stdint.h>
#ifndef GOPTL_RELEASE_FN
#define GOPTL_RELEASE_FN
typedef void (*goptl_release_fn)(uint32_t handle);
#endif
static void goptl_call_release(goptl_release_fn f, uint32_t handle) { if (f) f(handle); }
*/
import "C"

import (
	"sync/atomic"
)

// releaseFn holds the shim's function (a C.goptl_release_fn) that frees the
// slot of a handle if the handle still names that slot's live object; PtlInit
// hands it over.
var releaseFn atomic.Value

// setRelease records the shim's release function.
func setRelease(f C.goptl_release_fn) {
	if f != nil {
		releaseFn.Store(f)
	}
}

// entryGone is the OnUnlink of the entry whose handle is handle, in slot: the
// engine unlinked it (use-once, min_free), so its Go object is forgotten and
// the shim frees the handle. An entry already forgotten (an explicit unlink, a
// teardown) is left alone.
func entryGone(slot, handle uint32) {
	if !forgetHandle(slot, handle) {
		return
	}
	if f, ok := releaseFn.Load().(C.goptl_release_fn); ok {
		C.goptl_call_release(f, C.uint32_t(handle))
	}
}

// forgetHandle forgets the entry of slot if it is the one of handle, and
// reports whether it did.
func forgetHandle(slot, handle uint32) bool {
	p := slotOf(slot, false)
	if p == nil {
		return false
	}
	for {
		cur := p.Load()
		if cur == nil || cur.handle != handle {
			return false
		}
		if p.CompareAndSwap(cur, nil) {
			return true
		}
	}
}
