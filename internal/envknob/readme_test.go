package envknob

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readmeHeading is the README section that holds the table.
const readmeHeading = "## Environment knobs"

// readmeTable returns the Markdown table that follows readmeHeading.
func readmeTable(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n"+readmeHeading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q section", readmeHeading)
	}
	var rows []string
	for _, l := range strings.Split(sec, "\n") {
		if strings.HasPrefix(l, "|") {
			rows = append(rows, l)
		} else if len(rows) > 0 {
			break
		}
	}
	if len(rows) == 0 {
		t.Fatalf("README.md's %q section has no table", readmeHeading)
	}
	return strings.Join(rows, "\n") + "\n"
}

// rowNames returns the variable of each body row of a table.
func rowNames(table string) map[string]bool {
	names := map[string]bool{}
	for i, l := range strings.Split(strings.TrimSuffix(table, "\n"), "\n") {
		if i < 2 {
			continue
		}
		cell, _, _ := strings.Cut(strings.TrimPrefix(l, "| "), " |")
		names[strings.Trim(cell, "`")] = true
	}
	return names
}

// TestREADMETable checks that the README's table of environment knobs is the
// registry's, in both directions: every registered variable has its row, every
// row is registered, and each row says what the registry says.
func TestREADMETable(t *testing.T) {
	got, want := readmeTable(t), Markdown()
	inREADME, inRegistry := rowNames(got), rowNames(want)
	for n := range inRegistry {
		if !inREADME[n] {
			t.Errorf("%s is registered but missing from README.md's table", n)
		}
	}
	for n := range inREADME {
		if !inRegistry[n] {
			t.Errorf("README.md's table lists %s, which is not registered in internal/envknob", n)
		}
	}
	if got != want {
		t.Errorf("README.md's table differs from the registry; replace it with:\n%s", want)
	}
}
