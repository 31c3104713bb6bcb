package main

import (
	"strconv"
	"strings"

	"github.com/goportals/goportals/internal/envknob"
)

// envReport lists every registered variable (package envknob) with its value,
// and the PTL_* variables set that no part of the library reads. The job key's
// value is never shown.
func envReport() ([]EnvVar, []string) {
	var out []EnvVar
	for _, k := range envknob.All() {
		v, set := envknob.Lookup(k.Name)
		if set && k.Name == envknob.JobKey {
			v = "(set, " + strconv.Itoa(len(v)) + " characters, not shown)"
		}
		out = append(out, EnvVar{Name: string(k.Name), Set: set, Value: v, Meaning: k.Doc})
	}
	var unknown []string
	for _, kv := range envknob.Unknown("PTL_") {
		k, _, _ := strings.Cut(kv, "=")
		unknown = append(unknown, k)
	}
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
