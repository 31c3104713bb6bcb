package main

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/goportals/goportals/internal/envknob"

	"github.com/goportals/goportals/driverhooks"
	"github.com/goportals/goportals/internal/rdmadev"
	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/regcache"

	// The providers a goportals program links.
	"github.com/goportals/goportals/internal/verbs/ibv"
	_ "github.com/goportals/goportals/internal/verbs/loopback"
	"github.com/goportals/goportals/internal/verbs/soft"
)

// Report is everything ptlinfo prints.
type Report struct {
	Build     BuildInfo      `json:"build"`
	Selection Selection      `json:"selection"`
	Providers []ProviderInfo `json:"providers"`
	RDMA      RDMAInfo       `json:"rdma"`
	NI        NIInfo         `json:"ni"`
	Notifier  NotifierInfo   `json:"notifier"`
	PinCache  PinCacheInfo   `json:"pin_cache"`
	Memlock   MemlockInfo    `json:"memlock"`
	Ptrace    PtraceInfo     `json:"ptrace"`
	Env       []EnvVar       `json:"env"`
	// UnknownEnv are PTL_* variables set in the environment that no part of the
	// library reads (misspellings, variables of another version).
	UnknownEnv []string `json:"unknown_env,omitempty"`
}

// BuildInfo says what was built.
type BuildInfo struct {
	Module     string `json:"module"`
	Version    string `json:"version"`
	Go         string `json:"go"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	Cgo        bool   `json:"cgo"`
	Libibverbs string `json:"libibverbs"`
}

// Selection is the provider PTL_PROVIDER selects.
type Selection struct {
	Requested string `json:"requested"`
	Chosen    string `json:"chosen,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Error     string `json:"error,omitempty"`
}

// ProviderInfo is one linked provider.
type ProviderInfo struct {
	Name    string   `json:"name"`
	Usable  bool     `json:"usable"`
	Why     string   `json:"why,omitempty"`
	Devices []string `json:"devices"`
	// Detail says how the provider works here (soft: its pin method).
	Detail string `json:"detail,omitempty"`
}

// RDMAInfo is the RDMA hardware as sysfs describes it.
type RDMAInfo struct {
	// Kernel reports whether the kernel has an RDMA class at all.
	Kernel  bool             `json:"kernel"`
	Devices []rdmadev.Device `json:"devices"`
	Error   string           `json:"error,omitempty"`
}

// NotifierInfo is the memory notifier the pin cache relies on.
type NotifierInfo struct {
	Kind      string `json:"kind"`
	Guarantee string `json:"guarantee"`
	Error     string `json:"error,omitempty"`
}

// PinCacheInfo are the pin cache's knobs and the limits they give.
type PinCacheInfo struct {
	MaxEntries int    `json:"max_entries"`
	MaxBytes   uint64 `json:"max_bytes"`
	// EffectiveMaxBytes is MaxBytes lowered to RLIMIT_MEMLOCK (unless CAP_IPC_LOCK).
	EffectiveMaxBytes uint64 `json:"effective_max_bytes"`
	MemlockLimit      uint64 `json:"memlock_limit"`
	Disabled          bool   `json:"disabled"`
	CheckPFN          bool   `json:"check_pfn"`
	Error             string `json:"error,omitempty"`
}

// EnvVar is one PTL_* variable the library reads.
type EnvVar struct {
	Name    string `json:"name"`
	Set     bool   `json:"set"`
	Value   string `json:"value"`
	Meaning string `json:"meaning"`
}

// gather makes the report.
func gather() Report {
	var r Report
	r.Build = buildInfo()
	r.Env, r.UnknownEnv = envReport()
	r.Selection.Requested = envknob.Get(envknob.Provider)
	chosen, reason, err := verbs.Explain(r.Selection.Requested)
	if err != nil {
		r.Selection.Error = err.Error()
	} else {
		r.Selection.Chosen, r.Selection.Reason = chosen.Name(), reason
	}
	for _, p := range verbs.Providers() {
		pi := ProviderInfo{Name: p.Name(), Usable: true, Devices: []string{}}
		if pr, ok := p.(verbs.Prober); ok {
			if err := pr.Probe(); err != nil {
				pi.Usable, pi.Why = false, err.Error()
			}
		}
		devs, err := p.Devices()
		if err != nil && pi.Why == "" {
			pi.Usable, pi.Why = false, err.Error()
		}
		for _, d := range devs {
			pi.Devices = append(pi.Devices, d.Name())
		}
		if len(devs) == 0 && pi.Why == "" {
			pi.Usable, pi.Why = false, "no device"
		}
		switch {
		case p.Name() == soft.ProviderName && pi.Usable:
			pi.Detail = softDetail()
		case p.Name() == ibv.ProviderName && len(devs) > 0:
			pi.Detail = deviceDetail(devs[0])
		}
		r.Providers = append(r.Providers, pi)
	}
	r.RDMA = rdmaReport()

	r.NI = NIInfo{Error: "no provider selected"}
	if chosen != nil {
		r.NI = niForProvider(chosen)
	}
	r.Notifier = notifierReport()
	r.PinCache = pinCacheReport()
	r.Memlock = memlockReport()
	r.Ptrace = ptraceReport()
	return r
}

// softDetail opens a soft context to say which pin method registrations use.
func softDetail() string {
	c, err := soft.Open()
	if err != nil {
		return "cannot open: " + err.Error()
	}
	defer c.Close()
	return "pin method: " + c.PinMethod() + " (" + string(envknob.SoftPin) + " chooses)"
}

// deviceDetail opens d to say what queue pairs on it would use.
func deviceDetail(d verbs.Device) string {
	c, err := d.Open()
	if err != nil {
		return d.Name() + ": cannot open: " + err.Error()
	}
	defer c.Close()
	a := c.Attr()
	out := fmt.Sprintf("%s: max_qp %d, max_qp_wr %d, max_sge %d, max_cqe %d, max_inline %d, max_msg %d, atomics %v",
		d.Name(), a.MaxQP, a.MaxQPWR, a.MaxSGE, a.MaxCQE, a.MaxInline, a.MaxMsgSize, a.Atomics)
	if x, ok := c.(interface {
		Port() int
		GIDIndex() int
		ODP() bool
	}); ok {
		out += fmt.Sprintf("; port %d, gid index %d, on-demand paging %v", x.Port(), x.GIDIndex(), x.ODP())
	}
	return out
}

func buildInfo() BuildInfo {
	b := BuildInfo{Module: "github.com/goportals/goportals", Version: "(devel)", Go: runtime.Version(),
		OS: runtime.GOOS, Arch: runtime.GOARCH, Cgo: cgoEnabled}
	if bi, ok := debug.ReadBuildInfo(); ok {
		b.Module = bi.Main.Path
		if bi.Main.Version != "" {
			b.Version = bi.Main.Version
		}
	}
	if err := ibv.Linked(); err != nil {
		b.Libibverbs = "not linked: " + err.Error()
	} else {
		b.Libibverbs = "linked"
	}
	return b
}

func rdmaReport() RDMAInfo {
	devs, err := rdmadev.List()
	switch {
	case errors.Is(err, rdmadev.ErrNoRDMA):
		return RDMAInfo{Devices: []rdmadev.Device{}, Error: err.Error()}
	case err != nil:
		return RDMAInfo{Kernel: true, Devices: []rdmadev.Device{}, Error: err.Error()}
	}
	return RDMAInfo{Kernel: true, Devices: devs}
}

// niForProvider opens an NI on p's first device (the soft provider: the engine's
// default device).
func niForProvider(p verbs.Provider) NIInfo {
	devs, err := p.Devices()
	if err != nil {
		return NIInfo{Provider: p.Name(), Error: err.Error()}
	}
	if len(devs) == 0 {
		return NIInfo{Provider: p.Name(), Error: "the provider lists no device"}
	}
	return niInfo(p.Name(), devs[0])
}

func notifierReport() NotifierInfo {
	n := driverhooks.Default()
	info := NotifierInfo{Kind: string(n.Kind()), Guarantee: n.Guarantee()}
	if err := driverhooks.DefaultErr(); err != nil {
		info.Error = err.Error()
	}
	return info
}

// nopRegistrar registers nothing: it lets ptlinfo make a cache to read its limits.
type nopRegistrar struct{}

func (nopRegistrar) Register([]byte) (struct{}, error) { return struct{}{}, nil }
func (nopRegistrar) Deregister(struct{}) error         { return nil }

func pinCacheReport() PinCacheInfo {
	info := PinCacheInfo{MaxEntries: regcache.DefaultMaxEntries, MaxBytes: regcache.DefaultMaxBytes,
		CheckPFN: driverhooks.CheckPFNEnabled()}
	if err := regcache.CheckEnv(); err != nil {
		info.Error = err.Error()
		return info
	}
	// The knobs as the cache reads them (validated by CheckEnv above).
	if v := envknob.Get(envknob.RCacheMaxEntries); v != "" {
		if n, err := parseUint(v); err == nil {
			info.MaxEntries = int(n)
		}
	}
	if v := envknob.Get(envknob.RCacheMaxBytes); v != "" {
		if n, err := parseSize(v); err == nil {
			info.MaxBytes = n
		}
	}
	if v := envknob.Get(envknob.RCacheDisable); v != "" {
		info.Disabled, _ = parseBool(v)
	}
	c, err := regcache.New[struct{}](nopRegistrar{}, regcache.Options{})
	if err != nil {
		info.Error = err.Error()
		return info
	}
	st := c.Stats()
	c.Close()
	info.EffectiveMaxBytes, info.MemlockLimit = st.MaxBytes, st.MemlockLimit
	return info
}
