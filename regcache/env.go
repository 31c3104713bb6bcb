package regcache

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/goportals/goportals/driverhooks"
	"github.com/goportals/goportals/internal/envknob"
)

// Environment variables read by New (see the package documentation and the
// README's table of knobs).
const (
	EnvMaxEntries = string(envknob.RCacheMaxEntries)
	EnvMaxBytes   = string(envknob.RCacheMaxBytes)
	EnvDisable    = string(envknob.RCacheDisable)
)

// EnvError reports an environment variable with a value that cannot be used.
type EnvError struct {
	Name, Value, Reason string
}

// Error formats the error.
func (e *EnvError) Error() string {
	return fmt.Sprintf("regcache: %s=%q: %s", e.Name, e.Value, e.Reason)
}

// Is makes errors.Is(err, ErrBadEnv) match.
func (e *EnvError) Is(target error) bool { return target == ErrBadEnv }

// envPrefix is the prefix of the cache's variables; a variable with it that is not
// one of them (a misspelling) is an error rather than silently ignored.
const envPrefix = "PTL_RCACHE_"

// CheckEnv validates the environment knobs New reads (PTL_RCACHE_*, PTL_CHECK_PFN
// and the notifier's PTL_NOTIFIER), whatever Options a cache would be made with: a
// bad value or an unknown PTL_RCACHE_ variable is an *EnvError naming the variable
// and the accepted values, and PTL_CHECK_PFN=1 needs the page-frame oracle to open. Libraries that
// make caches lazily call it when they start, so a bad knob fails there.
func CheckEnv() error {
	var o Options
	if err := applyEnv(&o); err != nil {
		return err
	}
	if driverhooks.CheckPFNEnabled() {
		pfn, err := driverhooks.OpenPFNOracle()
		if err != nil {
			return fmt.Errorf("regcache: %s=1 asked for the page-frame oracle: %w", driverhooks.CheckPFNEnv, err)
		}
		pfn.Close()
	}
	return nil
}

// applyEnv fills the zero fields of o from the environment; PTL_RCACHE_DISABLE wins
// over everything. Every knob is validated, including those o overrides.
func applyEnv(o *Options) error {
	if unknown := envknob.Unknown(envPrefix); len(unknown) > 0 {
		k, v, _ := strings.Cut(unknown[0], "=")
		return &EnvError{k, v, "unknown variable (the cache reads " + EnvDisable + ", " + EnvMaxBytes +
			" and " + EnvMaxEntries + ")"}
	}
	if v, ok := envknob.Lookup(envknob.Notifier); ok {
		if _, err := driverhooks.ParseKind(v); err != nil {
			return &EnvError{driverhooks.EnvNotifier, v, "want auto, ebpf, seccomp, uffd or explicit"}
		}
	}
	if v, ok := envknob.Lookup(envknob.CheckPFN); ok && v != "" {
		switch v { // the values driverhooks.CheckPFNEnabled knows
		case "1", "true", "yes", "on", "0", "false", "no", "off":
		default:
			return &EnvError{driverhooks.CheckPFNEnv, v,
				"want 1, true, yes or on to check page frames, or 0, false, no or off (lower case)"}
		}
	}
	if v, ok := envknob.Lookup(envknob.RCacheDisable); ok && v != "" {
		b, err := parseBool(v)
		if err != nil {
			return &EnvError{EnvDisable, v, "want 0/1, true/false, yes/no or on/off"}
		}
		o.Disable = o.Disable || b
	}
	if v, ok := envknob.Lookup(envknob.RCacheMaxEntries); ok && v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n <= 0 {
			return &EnvError{EnvMaxEntries, v, "want a positive integer"}
		}
		if o.MaxEntries == 0 {
			o.MaxEntries = n
		}
	}
	if v, ok := envknob.Lookup(envknob.RCacheMaxBytes); ok && v != "" {
		n, err := parseSize(v)
		if err != nil || n == 0 {
			return &EnvError{EnvMaxBytes, v, "want a positive size in bytes, optionally with K, M, G or T (powers of 1024)"}
		}
		if o.MaxBytes == 0 {
			o.MaxBytes = n
		}
	}
	return nil
}

func parseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on", "y":
		return true, nil
	case "0", "false", "no", "off", "n":
		return false, nil
	}
	return false, strconv.ErrSyntax
}

// parseSize parses "4096", "64K", "512M", "2G" (binary multiples, optional "iB"/"B").
func parseSize(v string) (uint64, error) {
	s := strings.ToUpper(strings.TrimSpace(v))
	s = strings.TrimSuffix(strings.TrimSuffix(s, "B"), "I")
	mult := uint64(1)
	if s != "" {
		switch s[len(s)-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult != 1 {
			s = s[:len(s)-1]
		}
	}
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, err
	}
	if n > ^uint64(0)/mult {
		return 0, strconv.ErrRange
	}
	return n * mult, nil
}
