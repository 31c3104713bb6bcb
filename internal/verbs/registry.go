package verbs

import (
	"sort"
	"sync"
)

var registry struct {
	mu        sync.Mutex
	providers map[string]Provider
}

// Register makes a provider available by name. Providers call it from init;
// registering the same name twice replaces the earlier one.
func Register(p Provider) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if registry.providers == nil {
		registry.providers = make(map[string]Provider)
	}
	registry.providers[p.Name()] = p
}

// Providers returns the registered providers sorted by name.
func Providers() []Provider {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	out := make([]Provider, 0, len(registry.providers))
	for _, p := range registry.providers {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out
}

// Lookup returns the provider registered under name.
func Lookup(name string) (Provider, error) {
	registry.mu.Lock()
	defer registry.mu.Unlock()
	if p, ok := registry.providers[name]; ok {
		return p, nil
	}
	return nil, Errorf("lookup "+name, ErrNoDevice, nil)
}
