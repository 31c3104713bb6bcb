package bootstrap

import (
	"context"
	"sync"
)

// A process joins its job once: the launcher admits one connection per rank. The
// library's own join (PtlInit under a launcher) and the application's (package
// job) share that connection through Shared; it closes when the last holder
// releases it.

var shared struct {
	mu   sync.Mutex
	b    Bootstrap
	refs int
}

// Shared returns the process's bootstrap, opening it (Open) on first use, and the
// function that releases this holder's reference (the connection closes with the
// last one). The keys of different holders share one namespace per rank.
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
			if shared.refs--; shared.refs == 0 {
				err = shared.b.Close()
				shared.b = nil
			}
		})
		return err
	}
	return b, release, nil
}
