package eq

import (
	"fmt"
	"strconv"
	"strings"
)

// enumName returns names[v] or a numeric form for a value outside the table, so String
// never panics on a value that came off the wire.
func enumName(names []string, v int, typ string) string {
	if v >= 0 && v < len(names) && names[v] != "" {
		return names[v]
	}
	return typ + "(" + strconv.Itoa(v) + ")"
}

// parseEnum finds s among the C names of a table, or among the short names made by
// stripping prefix and suffix, or among extra aliases. Case is ignored.
func parseEnum(s string, names []string, prefix, suffix string, aliases map[string]int, typ string) (int, error) {
	u := strings.ToUpper(strings.TrimSpace(s))
	for i, n := range names {
		if u == n || u == strings.TrimSuffix(strings.TrimPrefix(n, prefix), suffix) {
			return i, nil
		}
	}
	if v, ok := aliases[u]; ok {
		return v, nil
	}
	return 0, fmt.Errorf("%w: %s %q", ErrUnknownName, typ, s)
}
