package shmem

import "sync"

// Global is a symmetric global variable: an array of n elements of T declared
// at package level with NewGlobal and allocated, zeroed, by Init at the same
// heap offset on every PE. Every PE runs the same program, so every PE
// registers the same globals in the same order before Init; that order fixes
// the offsets. (OpenSHMEM's symmetric data segment has no Go counterpart; this
// is its stand-in.)
type Global[T Elem] struct {
	g *global
}

type global struct {
	n    int
	size uint64
	// Set by Init: the World that allocated the global and the offset.
	w   *World
	off uint64
}

var globals struct {
	mu   sync.Mutex
	list []*global
}

// NewGlobal declares a symmetric global of n elements (n < 0 counts as 0).
// Declare globals in package-level variables, so that every PE declares them
// in the same order before Init.
func NewGlobal[T Elem](n int) Global[T] {
	g := &global{n: max(n, 0), size: uint64(max(n, 0)) * uint64(sizeOf[T]())}
	globals.mu.Lock()
	globals.list = append(globals.list, g)
	globals.mu.Unlock()
	return Global[T]{g: g}
}

// Sym returns the global as a symmetric object of w. A global declared after
// w's Init (or a zero Global) gives a Sym whose calls fail with ErrOutOfRange.
func (g Global[T]) Sym(w *World) Sym[T] {
	if g.g == nil {
		return Sym[T]{err: errf(ErrOutOfRange, "zero Global")}
	}
	globals.mu.Lock()
	gw, off := g.g.w, g.g.off
	globals.mu.Unlock()
	if gw != w || w == nil {
		return Sym[T]{err: errf(ErrOutOfRange, "global declared after Init of this World")}
	}
	return Sym[T]{w: w, off: off, n: g.g.n}
}

// allocGlobals places every declared global in w's heap (zeroed: the heap is
// fresh). Called by Init before any other allocation but the library's own.
func (w *World) allocGlobals() error {
	globals.mu.Lock()
	defer globals.mu.Unlock()
	for _, g := range globals.list {
		off, ok := w.alloc.allocate(g.size, 8)
		if !ok {
			return errf(ErrNoSpace, "symmetric globals need more than the heap of %d bytes", w.HeapSize())
		}
		g.w, g.off = w, off
		w.globalOffs[off] = true
	}
	return nil
}
