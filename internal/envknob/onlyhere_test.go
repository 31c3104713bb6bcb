package envknob

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// envReaders are the functions that read one environment variable.
var envReaders = map[string]map[string]bool{
	"os":      {"Getenv": true, "LookupEnv": true},
	"syscall": {"Getenv": true},
}

// TestOnlyEnvknobReadsPTL walks the module's non-test Go files and fails on any
// read of a PTL_* variable outside this package: os.Getenv or os.LookupEnv (or
// syscall.Getenv) called with a PTL_ string, with a constant whose declaration
// holds one or names an envknob Name, or taken as a function value (which could be
// handed a PTL_ name later). Tests are exempt: their private re-exec markers are
// not knobs.
func TestOnlyEnvknobReadsPTL(t *testing.T) {
	root := filepath.Join("..", "..")
	fset := token.NewFileSet()
	type file struct {
		path string
		f    *ast.File
	}
	var files []file
	ptlConsts := map[string]bool{} // names of constants anywhere whose value is a PTL_ name
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); path != root && (strings.HasPrefix(n, ".") || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files = append(files, file{path, f})
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, sp := range gd.Specs {
				vs := sp.(*ast.ValueSpec)
				for i, v := range vs.Values {
					if i < len(vs.Names) && namesPTL(v) {
						ptlConsts[vs.Names[i].Name] = true
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 20 {
		t.Fatalf("found only %d Go files under %s", len(files), root)
	}
	self, _ := filepath.Abs(".")
	for _, fl := range files {
		if dir, _ := filepath.Abs(filepath.Dir(fl.path)); dir == self {
			continue
		}
		imports := map[string]string{} // local name -> path, for os and syscall
		for _, im := range fl.f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			name := p
			if im.Name != nil {
				name = im.Name.Name
			}
			imports[name] = p
		}
		isReader := func(e ast.Expr) (string, bool) {
			sel, ok := e.(*ast.SelectorExpr)
			if !ok {
				return "", false
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok {
				return "", false
			}
			p, ok := imports[x.Name]
			if !ok || !envReaders[p][sel.Sel.Name] {
				return "", false
			}
			return p + "." + sel.Sel.Name, true
		}
		called := map[ast.Expr]bool{}
		ast.Inspect(fl.f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			fn, ok := isReader(call.Fun)
			if !ok {
				return true
			}
			called[call.Fun] = true
			if len(call.Args) == 1 && (namesPTL(call.Args[0]) || refersTo(call.Args[0], ptlConsts)) {
				t.Errorf("%s: %s of a PTL_ variable: read it with envknob.Lookup or envknob.Get",
					fset.Position(call.Pos()), fn)
			}
			return true
		})
		ast.Inspect(fl.f, func(n ast.Node) bool {
			e, ok := n.(ast.Expr)
			if !ok || called[e] {
				return true
			}
			if fn, ok := isReader(e); ok {
				t.Errorf("%s: %s taken as a value; PTL_ variables must be read with envknob.Lookup", fset.Position(e.Pos()), fn)
			}
			return true
		})
	}
}

// namesPTL reports whether e is a PTL_ string literal or mentions an envknob Name.
func namesPTL(e ast.Expr) bool {
	found := false
	ast.Inspect(e, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.BasicLit:
			if s, err := strconv.Unquote(n.Value); err == nil && strings.HasPrefix(s, "PTL_") {
				found = true
			}
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && x.Name == "envknob" {
				found = true
			}
		}
		return !found
	})
	return found
}

// refersTo reports whether e is (or selects) one of the named constants.
func refersTo(e ast.Expr, consts map[string]bool) bool {
	switch e := e.(type) {
	case *ast.Ident:
		return consts[e.Name]
	case *ast.SelectorExpr:
		return consts[e.Sel.Name]
	case *ast.CallExpr: // string(envknob.X)
		return len(e.Args) == 1 && refersTo(e.Args[0], consts)
	}
	return false
}
