package portals_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The README's "Using it" code is not prose: it is the body of Example in
// example_test.go, which the tests compile and run (its output is checked). This
// test keeps the two identical, so the README's code always builds and stays true.
const (
	readmeSection = "## Using it"
	readmeExample = "Example"
)

// readmeGoBlock returns the first ```go block of the README's readmeSection.
func readmeGoBlock(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(b), "\n"+readmeSection+"\n")
	if !ok {
		t.Fatalf("README.md has no %q section", readmeSection)
	}
	if next := strings.Index(sec, "\n## "); next >= 0 {
		sec = sec[:next]
	}
	_, code, ok := strings.Cut(sec, "```go\n")
	if !ok {
		t.Fatalf("README.md's %q section has no ```go block", readmeSection)
	}
	code, _, ok = strings.Cut(code, "```")
	if !ok {
		t.Fatalf("README.md's %q section: the ```go block is not closed", readmeSection)
	}
	return code
}

// exampleBody returns the statements of the function name in example_test.go, one
// indentation level removed, as the README shows them.
func exampleBody(t *testing.T, name string) string {
	t.Helper()
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "example_test.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		fd, ok := d.(*ast.FuncDecl)
		if !ok || fd.Name.Name != name || fd.Recv != nil {
			continue
		}
		open, end := fset.Position(fd.Body.Lbrace).Offset, fset.Position(fd.Body.Rbrace).Offset
		inner := string(src[open+1 : end])
		inner = strings.TrimPrefix(inner, "\n")
		var out strings.Builder
		for _, l := range strings.SplitAfter(inner, "\n") {
			out.WriteString(strings.TrimPrefix(l, "\t"))
		}
		return out.String()
	}
	t.Fatalf("example_test.go has no func %s", name)
	return ""
}

func TestREADMEIsExample(t *testing.T) {
	got, want := readmeGoBlock(t), exampleBody(t, readmeExample)
	if got != want {
		gl, wl := strings.Split(got, "\n"), strings.Split(want, "\n")
		line := 0
		for line < len(gl) && line < len(wl) && gl[line] == wl[line] {
			line++
		}
		t.Fatalf("README.md's %q code differs from the body of %s in portals/example_test.go "+
			"(first at line %d of the block: README %q, example %q); paste the body in:\n%s",
			readmeSection, readmeExample, line+1, at(gl, line), at(wl, line), want)
	}
}

func at(lines []string, i int) string {
	if i < len(lines) {
		return lines[i]
	}
	return "(end)"
}
