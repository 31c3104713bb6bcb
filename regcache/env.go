package regcache

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Environment variables read by New (see the package documentation).
const (
	EnvMaxEntries = "PTL_RCACHE_MAX_ENTRIES"
	EnvMaxBytes   = "PTL_RCACHE_MAX_BYTES"
	EnvDisable    = "PTL_RCACHE_DISABLE"
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

// applyEnv fills the zero fields of o from the environment; PTL_RCACHE_DISABLE wins
// over everything.
func applyEnv(o *Options) error {
	if v, ok := os.LookupEnv(EnvDisable); ok && v != "" {
		b, err := parseBool(v)
		if err != nil {
			return &EnvError{EnvDisable, v, "want 0/1, true/false, yes/no or on/off"}
		}
		o.Disable = o.Disable || b
	}
	if v, ok := os.LookupEnv(EnvMaxEntries); ok && v != "" && o.MaxEntries == 0 {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n <= 0 {
			return &EnvError{EnvMaxEntries, v, "want a positive integer"}
		}
		o.MaxEntries = n
	}
	if v, ok := os.LookupEnv(EnvMaxBytes); ok && v != "" && o.MaxBytes == 0 {
		n, err := parseSize(v)
		if err != nil || n == 0 {
			return &EnvError{EnvMaxBytes, v, "want a positive size in bytes, optionally with K, M or G (powers of 1024)"}
		}
		o.MaxBytes = n
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
