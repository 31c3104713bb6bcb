package driverhooks

import "github.com/google/btree"

// rangeSet is a set of addresses kept as disjoint half-open spans: the monitor's
// record of what it registered, so that shutting down can unregister it.
type rangeSet struct {
	t       *btree.BTreeG[span]
	scratch []span
}

func newRangeSet() *rangeSet {
	return &rangeSet{t: btree.NewG(8, func(a, b span) bool { return a.start < b.start })}
}

// touching collects the spans that overlap [start, end), or also merely touch it
// when adjacent is set.
func (r *rangeSet) touching(start, end uintptr, adjacent bool) []span {
	r.scratch = r.scratch[:0]
	r.t.DescendLessOrEqual(span{start: start}, func(s span) bool {
		if s.end > start || (adjacent && s.end == start) {
			r.scratch = append(r.scratch, s)
		}
		return false
	})
	r.t.AscendGreaterOrEqual(span{start: start}, func(s span) bool {
		if s.start > end || (!adjacent && s.start == end) {
			return false
		}
		if len(r.scratch) == 0 || r.scratch[len(r.scratch)-1] != s {
			r.scratch = append(r.scratch, s)
		}
		return true
	})
	return r.scratch
}

// add inserts [start, end), merging with what it overlaps or touches.
func (r *rangeSet) add(start, end uintptr) {
	for _, s := range r.touching(start, end, true) {
		r.t.Delete(s)
		start, end = min(start, s.start), max(end, s.end)
	}
	r.t.ReplaceOrInsert(span{start, end})
}

// remove deletes [start, end), keeping the parts of spans outside it.
func (r *rangeSet) remove(start, end uintptr) {
	for _, s := range r.touching(start, end, false) {
		r.t.Delete(s)
		if s.start < start {
			r.t.ReplaceOrInsert(span{s.start, start})
		}
		if s.end > end {
			r.t.ReplaceOrInsert(span{end, s.end})
		}
	}
}

// spans returns the disjoint spans in address order.
func (r *rangeSet) spans() []span {
	var out []span
	r.t.Ascend(func(s span) bool { out = append(out, s); return true })
	return out
}

// len returns the number of disjoint spans.
func (r *rangeSet) len() int { return r.t.Len() }
