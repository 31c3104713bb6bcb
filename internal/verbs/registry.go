package verbs

import (
	"errors"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/goportals/goportals/internal/envknob"
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

// EnvProvider is the environment variable Choose reads: auto (or empty), soft, ibv
// or loopback.
const EnvProvider = string(envknob.Provider)

// Prober is implemented by providers whose usability depends on the machine (ibv:
// libibverbs, a device with an active port). Probe returns nil when the provider can
// carry traffic now, else an error matching ErrNotSupported (the build or the kernel
// lacks it) or ErrNoDevice (no device, or no active port) that says why.
type Prober interface {
	Probe() error
}

// Names of the providers selection knows about.
const (
	nameAuto     = "auto"
	nameSoft     = "soft"
	nameIBV      = "ibv"
	nameLoopback = "loopback"
)

// Choose returns the provider named by PTL_PROVIDER (see Select).
func Choose() (Provider, error) { return Select(envknob.Get(envknob.Provider)) }

// Select returns the provider for name: "auto" (or empty) is ibv when it probes
// usable (a device with an active port) and soft otherwise; soft, ibv and loopback
// name a provider, which must be linked into the program (imported) and, for ibv,
// usable. An unknown name is an *OpError matching ErrUnknownProvider; a provider this
// program does not link matches ErrNotSupported; a provider that probes unusable
// carries its probe error (ErrNoDevice or ErrNotSupported).
func Select(name string) (Provider, error) {
	p, _, err := Explain(name)
	return p, err
}

// Explain is Select that also says, in one line, why the provider was chosen (for
// ptlinfo and logs).
func Explain(name string) (Provider, string, error) {
	req := strings.ToLower(strings.TrimSpace(name))
	if req == "" {
		req = nameAuto
	}
	op := "select provider " + strconv.Quote(req)
	if req == nameAuto {
		var why []string
		if p, err := Lookup(nameIBV); err == nil {
			perr := probe(p)
			if perr == nil {
				return p, "auto: ibv has a device with an active port", nil
			}
			why = append(why, "ibv: "+perr.Error())
		} else {
			why = append(why, "ibv: not linked into this program")
		}
		if p, err := Lookup(nameSoft); err == nil {
			if perr := probe(p); perr != nil {
				why = append(why, "soft: "+perr.Error())
				return nil, "", Errorf(op, ErrNotSupported, errors.New(strings.Join(why, "; ")))
			}
			return p, "auto: soft (" + strings.Join(why, "; ") + ")", nil
		}
		why = append(why, "soft: not linked into this program")
		return nil, "", Errorf(op, ErrNotSupported, errors.New(strings.Join(why, "; ")))
	}
	p, err := Lookup(req)
	if err != nil {
		switch req {
		case nameSoft, nameIBV, nameLoopback:
			return nil, "", Errorf(op, ErrNotSupported, errors.New("provider not linked into this program"))
		}
		return nil, "", Errorf(op, ErrUnknownProvider, errors.New("want auto, soft, ibv or loopback"))
	}
	if perr := probe(p); perr != nil {
		return nil, "", &OpError{Op: op, Err: perr}
	}
	return p, "requested by name", nil
}

// probe runs p's Probe when it has one.
func probe(p Provider) error {
	if pr, ok := p.(Prober); ok {
		return pr.Probe()
	}
	return nil
}
