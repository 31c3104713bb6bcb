package envknob

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// declaredNames returns the Name constants declared in this package's source.
func declaredNames(t *testing.T) map[Name]bool {
	t.Helper()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	names := map[Name]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		af, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range af.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, sp := range gd.Specs {
				vs := sp.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != "Name" {
					continue
				}
				for _, v := range vs.Values {
					lit, ok := v.(*ast.BasicLit)
					if !ok {
						t.Fatalf("%s: a Name constant that is not a string literal", fset.Position(v.Pos()))
					}
					s, _ := strconv.Unquote(lit.Value)
					names[Name(s)] = true
				}
			}
		}
	}
	return names
}

func TestEveryNameRegistered(t *testing.T) {
	declared := declaredNames(t)
	if len(declared) == 0 {
		t.Fatal("found no Name constants")
	}
	seen := map[Name]bool{}
	for _, k := range All() {
		if seen[k.Name] {
			t.Errorf("%s is registered twice", k.Name)
		}
		seen[k.Name] = true
		if !declared[k.Name] {
			t.Errorf("%s is registered but has no Name constant", k.Name)
		}
		if !strings.HasPrefix(string(k.Name), "PTL_") {
			t.Errorf("%s does not start with PTL_", k.Name)
		}
		if k.Default == "" || k.Values == "" || k.Doc == "" || k.ReadBy == "" {
			t.Errorf("%s: every field must be filled: %+v", k.Name, k)
		}
		if strings.Contains(k.Doc, "\n") {
			t.Errorf("%s: the doc must be one line", k.Name)
		}
	}
	for n := range declared {
		if !seen[n] {
			t.Errorf("the constant %s is not registered", n)
		}
	}
}

func TestLookup(t *testing.T) {
	t.Setenv(string(Notifier), "uffd")
	if v, ok := Lookup(Notifier); !ok || v != "uffd" {
		t.Fatalf("Lookup(%s) = %q, %v", Notifier, v, ok)
	}
	if v := Get(Notifier); v != "uffd" {
		t.Fatalf("Get = %q", v)
	}
	t.Setenv(string(Notifier), "")
	if v, ok := Lookup(Notifier); !ok || v != "" {
		t.Fatalf("set but empty: %q, %v", v, ok)
	}
	const stray = Name("PTL_NOT_A_KNOB")
	t.Setenv(string(stray), "1")
	if v, ok := Lookup(stray); ok || v != "" {
		t.Fatalf("an unregistered name read as %q, %v", v, ok)
	}
}

func TestSet(t *testing.T) {
	t.Setenv(string(CheckPFN), "")
	if err := Set(CheckPFN, "1"); err != nil {
		t.Fatal(err)
	}
	if Get(CheckPFN) != "1" {
		t.Fatal("Set did not set")
	}
	if err := Set("PTL_NOT_A_KNOB", "1"); !errors.Is(err, ErrUnregistered) {
		t.Fatalf("Set of an unregistered name: %v", err)
	}
}

func TestUnknown(t *testing.T) {
	t.Setenv(string(RCacheMaxBytes), "1M")
	t.Setenv("PTL_RCACHE_MAX_BYTE", "1M")
	t.Setenv("PTL_RCACHE_DISABEL", "1")
	got := Unknown("PTL_RCACHE_")
	want := []string{"PTL_RCACHE_DISABEL=1", "PTL_RCACHE_MAX_BYTE=1M"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Unknown = %q, want %q", got, want)
	}
}

func TestMarkdownRows(t *testing.T) {
	md := Markdown()
	rows := strings.Split(strings.TrimSuffix(md, "\n"), "\n")
	if len(rows) != len(knobs)+2 {
		t.Fatalf("%d rows for %d knobs", len(rows), len(knobs))
	}
	for i, k := range knobs {
		r := rows[i+2]
		if !strings.HasPrefix(r, "| `"+string(k.Name)+"` |") || strings.Count(r, " | ") != 4 {
			t.Errorf("row %q", r)
		}
	}
}
