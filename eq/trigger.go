package eq

import "container/heap"

// Trigger is an operation registered on a counter at a threshold (a triggered put, get,
// atomic, or a triggered CT increment or set). Fire runs exactly once, outside every lock
// of this package, when the counter's success+failure reaches the threshold. Fire must not
// block on work that needs the goroutine that called Inc, Set or AddTrigger.
type Trigger interface {
	Fire()
}

// Canceler is implemented by triggers that hold resources: when a trigger is dropped
// without firing (by [Counter.CancelTriggered] or [Counter.Free]) its Cancel method runs
// exactly once instead of Fire, outside every lock, so the engine can release what the
// operation held.
type Canceler interface {
	Cancel()
}

// TriggerFunc adapts a function to the Trigger interface.
type TriggerFunc func()

// Fire calls f.
func (f TriggerFunc) Fire() { f() }

// trigEntry is one pending trigger. seq orders triggers of equal threshold by
// registration.
type trigEntry struct {
	threshold uint64
	seq       uint64
	t         Trigger
}

// trigHeap is a min-heap of pending triggers by (threshold, seq), kept with
// container/heap. Entries are added and removed through heap.Fix on the slice rather than
// heap.Push/heap.Pop, whose interface{} argument and result would allocate per trigger.
type trigHeap []trigEntry

func (h trigHeap) Len() int { return len(h) }

func (h trigHeap) Less(i, j int) bool {
	if h[i].threshold != h[j].threshold {
		return h[i].threshold < h[j].threshold
	}
	return h[i].seq < h[j].seq
}

func (h trigHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

// Push is part of heap.Interface; add is the allocation-free path.
func (h *trigHeap) Push(x any) { *h = append(*h, x.(trigEntry)) }

// Pop is part of heap.Interface; popMin is the allocation-free path.
func (h *trigHeap) Pop() any {
	old := *h
	n := len(old) - 1
	e := old[n]
	old[n] = trigEntry{}
	*h = old[:n]
	return e
}

func (h *trigHeap) add(e trigEntry) {
	*h = append(*h, e)
	heap.Fix(h, len(*h)-1)
}

// popMin removes and returns the entry with the lowest (threshold, seq). h must not be
// empty.
func (h *trigHeap) popMin() trigEntry {
	old := *h
	n := len(old) - 1
	e := old[0]
	old[0] = old[n]
	old[n] = trigEntry{}
	*h = old[:n]
	if n > 0 {
		heap.Fix(h, 0)
	}
	return e
}

// drain removes every entry and returns them in firing order.
func (h *trigHeap) drain() []trigEntry {
	if len(*h) == 0 {
		return nil
	}
	out := make([]trigEntry, 0, len(*h))
	for len(*h) > 0 {
		out = append(out, h.popMin())
	}
	*h = nil
	return out
}

// cancelAll runs Cancel on the entries whose trigger implements Canceler, in order.
func cancelAll(es []trigEntry) {
	for _, e := range es {
		if c, ok := e.t.(Canceler); ok {
			c.Cancel()
		}
	}
}
