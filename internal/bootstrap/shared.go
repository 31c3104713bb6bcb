package bootstrap

import (
	"context"
	"errors"
	"sync"
)

// A process joins its job once: the launcher admits one connection per rank. The
// library's own join (PtlInit under a launcher) and the application's (package
// job) share that connection through Shared; it closes when the last holder
// releases it, unless KeepShared asked to keep it for a later Shared.

var shared struct {
	mu   sync.Mutex
	b    Bootstrap
	refs int
	keep bool
}

// ErrSharedHeld is CloseShared's answer while holders remain.
var ErrSharedHeld = errors.New("the shared join still has holders")

// Shared returns the process's bootstrap, opening it (Open) on first use, and the
// function that releases this holder's reference (the connection closes with the
// last one, unless KeepShared was called). The keys of different holders share
// one namespace per rank.
func Shared(ctx context.Context) (Bootstrap, func() error, error) {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.b == nil {
		b, err := Open(ctx)
		if err != nil {
			return nil, nil, err
		}
		shared.b = b
	}
	shared.refs++
	b := shared.b
	var once sync.Once
	release := func() error {
		var err error
		once.Do(func() {
			shared.mu.Lock()
			defer shared.mu.Unlock()
			if shared.refs--; shared.refs == 0 && !shared.keep {
				err = shared.b.Close()
				shared.b = nil
			}
		})
		return err
	}
	return b, release, nil
}

// KeepShared keeps the shared join open once its last holder releases it, for
// the life of the process, so that a later Shared (a second PtlInit after the
// last PtlFini, as libraries made of several components do) joins through it
// again: the launcher would refuse a second connection of the rank. The caller
// must then end the join with CloseShared before the process exits, or the
// launcher sees the rank leave without saying goodbye.
func KeepShared() {
	shared.mu.Lock()
	shared.keep = true
	shared.mu.Unlock()
}

// CloseShared closes a join KeepShared kept once no holder remains; it fails
// while holders remain and does nothing without a join. Later Shared calls
// open a new join (which a launcher refuses), so call it only at the end.
func CloseShared() error {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.b == nil {
		return nil
	}
	if shared.refs > 0 {
		return opErr("close", -1, "", ErrSharedHeld)
	}
	err := shared.b.Close()
	shared.b = nil
	return err
}
