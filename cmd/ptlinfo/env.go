package main

import (
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/goportals/goportals/driverhooks"
	"github.com/goportals/goportals/internal/bootstrap"
	"github.com/goportals/goportals/internal/verbs"
	"github.com/goportals/goportals/internal/verbs/soft"
	"github.com/goportals/goportals/regcache"
)

// softPinEnv is the soft provider's pin-method knob (the provider keeps its name
// unexported; TestKnownEnvComplete checks this list against the sources).
const softPinEnv = "PTL_SOFT_PIN"

// knownEnv are the PTL_* variables the library reads, with what they do.
var knownEnv = []struct {
	name, meaning string
	secret        bool
}{
	{name: verbs.EnvProvider, meaning: "verbs provider: auto (ibv with an active port, else soft), soft, ibv, loopback"},
	{name: softPinEnv, meaning: "soft provider pin method: auto (io_uring fixed buffers, else mlock), " + soft.PinIOUring + ", " + soft.PinMlock},
	{name: driverhooks.EnvNotifier, meaning: "memory notifier: auto (ebpf, else uffd), ebpf, seccomp, uffd, explicit"},
	{name: driverhooks.CheckPFNEnv, meaning: "1: check page frames on every pin-cache hit (debug, root)"},
	{name: regcache.EnvMaxEntries, meaning: "pin cache: most cached registrations"},
	{name: regcache.EnvMaxBytes, meaning: "pin cache: most pinned bytes (lowered to RLIMIT_MEMLOCK)"},
	{name: regcache.EnvDisable, meaning: "pin cache: 1 registers per operation, caching nothing"},
	{name: bootstrap.EnvRank, meaning: "rank, set by ptlrun"},
	{name: bootstrap.EnvSize, meaning: "job size, set by ptlrun"},
	{name: bootstrap.EnvAddr, meaning: "launcher's bootstrap server, set by ptlrun"},
	{name: bootstrap.EnvJobKey, meaning: "job secret, set by ptlrun (value not shown)", secret: true},
}

// envReport lists the known variables with their values, and the PTL_* variables
// set that no part of the library reads.
func envReport() ([]EnvVar, []string) {
	known := map[string]bool{}
	var out []EnvVar
	for _, k := range knownEnv {
		known[k.name] = true
		v, set := os.LookupEnv(k.name)
		if set && k.secret {
			v = "(set, " + strconv.Itoa(len(v)) + " characters, not shown)"
		}
		out = append(out, EnvVar{Name: k.name, Set: set, Value: v, Meaning: k.meaning})
	}
	var unknown []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "PTL_") && !known[k] {
			unknown = append(unknown, k)
		}
	}
	sort.Strings(unknown)
	return out, unknown
}

// parseUint parses a decimal count.
func parseUint(s string) (uint64, error) { return strconv.ParseUint(strings.TrimSpace(s), 10, 64) }

// parseSize parses a byte count with an optional K, M, G or T suffix (powers of 1024,
// an optional trailing B or iB), as the pin cache accepts.
func parseSize(s string) (uint64, error) {
	s = strings.ToUpper(strings.TrimSpace(s))
	s = strings.TrimSuffix(strings.TrimSuffix(s, "B"), "I")
	mult := uint64(1)
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'K':
			mult, s = 1<<10, s[:n-1]
		case 'M':
			mult, s = 1<<20, s[:n-1]
		case 'G':
			mult, s = 1<<30, s[:n-1]
		case 'T':
			mult, s = 1<<40, s[:n-1]
		}
	}
	v, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, err
	}
	if v > ^uint64(0)/mult {
		return 0, strconv.ErrRange
	}
	return v * mult, nil
}

// parseBool parses a yes/no knob as the pin cache does.
func parseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on", "y":
		return true, nil
	case "0", "false", "no", "off", "n":
		return false, nil
	}
	return false, strconv.ErrSyntax
}
