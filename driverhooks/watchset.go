package driverhooks

import "github.com/google/btree"

// seg is a span of addresses watched n times.
type seg struct {
	start, end uintptr
	n          int
}

// watchSet counts, page range by page range, how many Watch calls cover each address,
// so that several caches (or one cache's merged entries) can watch overlapping ranges
// and a range is unregistered only when the last watcher lets it go. It is a B-tree
// of disjoint segments ordered by start.
type watchSet struct {
	t  *btree.BTreeG[seg]
	in []seg // scratch
}

func newWatchSet() *watchSet {
	return &watchSet{t: btree.NewG(8, func(a, b seg) bool { return a.start < b.start })}
}

// split makes x a segment boundary.
func (w *watchSet) split(x uintptr) {
	var hit seg
	found := false
	w.t.DescendLessOrEqual(seg{start: x}, func(s seg) bool {
		if s.start < x && s.end > x {
			hit, found = s, true
		}
		return false
	})
	if found {
		w.t.ReplaceOrInsert(seg{hit.start, x, hit.n})
		w.t.ReplaceOrInsert(seg{x, hit.end, hit.n})
	}
}

// within collects the segments inside [start, end) (boundaries already split).
func (w *watchSet) within(start, end uintptr) []seg {
	w.in = w.in[:0]
	w.t.AscendRange(seg{start: start}, seg{start: end}, func(s seg) bool {
		w.in = append(w.in, s)
		return true
	})
	return w.in
}

// add counts one more watch of [start, end).
func (w *watchSet) add(start, end uintptr) {
	w.split(start)
	w.split(end)
	cur := start
	for _, s := range w.within(start, end) {
		if s.start > cur {
			w.t.ReplaceOrInsert(seg{cur, s.start, 1})
		}
		w.t.ReplaceOrInsert(seg{s.start, s.end, s.n + 1})
		cur = s.end
	}
	if cur < end {
		w.t.ReplaceOrInsert(seg{cur, end, 1})
	}
}

// remove counts one watch of [start, end) less and returns the spans that nobody
// watches any more (to unregister), merged where adjacent.
func (w *watchSet) remove(start, end uintptr) []span {
	w.split(start)
	w.split(end)
	var free []span
	for _, s := range w.within(start, end) {
		if s.n > 1 {
			w.t.ReplaceOrInsert(seg{s.start, s.end, s.n - 1})
			continue
		}
		w.t.Delete(s)
		if k := len(free); k > 0 && free[k-1].end == s.start {
			free[k-1].end = s.end
		} else {
			free = append(free, span{s.start, s.end})
		}
	}
	return free
}

// spans returns the watched addresses as maximal disjoint spans.
func (w *watchSet) spans() []span {
	var out []span
	w.t.Ascend(func(s seg) bool {
		if k := len(out); k > 0 && out[k-1].end == s.start {
			out[k-1].end = s.end
		} else {
			out = append(out, span{s.start, s.end})
		}
		return true
	})
	return out
}
