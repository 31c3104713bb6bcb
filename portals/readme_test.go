package portals_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
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

// TestDocsStayInside checks that the README's and docs/' relative links name files
// of the repository, and that no Go or Markdown file cites notes kept outside it:
// the repository explains itself.
func TestDocsStayInside(t *testing.T) {
	root := ".."
	link := regexp.MustCompile(`\]\(([^)#]+)(#[^)]*)?\)`)
	mds, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	mds = append(mds, filepath.Join(root, "README.md"))
	for _, p := range mds {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(p), target)); err != nil {
				t.Errorf("%s links to %s, which is not in the repository", p, target)
			}
		}
	}
	banned := []string{"design" + ".md", "shared" + " notes", "design" + " notes"}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && p != root {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, ".md") {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, s := range banned {
			if i := strings.Index(string(b), s); i >= 0 {
				t.Errorf("%s:%d cites %q, outside the repository: carry the fact into the package docs or docs/",
					p, strings.Count(string(b[:i]), "\n")+1, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
