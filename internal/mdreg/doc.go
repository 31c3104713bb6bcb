// Package mdreg registers the memory behind descriptors (package md) for the
// protocol engine: a Registry takes the registrations a transfer needs from the
// pin cache (package regcache) over a verbs protection domain, lazily, and a
// Pinned hands the engine the scatter/gather entries and remote segments of one
// transfer. It is internal: no consumer ever sees a key.
package mdreg

import "github.com/goportals/goportals/md"

// The registry's errors are package md's, so errors.Is matches either name.
var (
	ErrClosed      = md.ErrClosed
	ErrBusy        = md.ErrBusy
	ErrNotPinned   = md.ErrNotPinned
	ErrPinnedInUse = md.ErrPinnedInUse
	ErrBadArgument = md.ErrBadArgument
)
