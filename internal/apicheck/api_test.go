package apicheck

import (
	"go/importer"
	"go/token"
	"go/types"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/goportals/goportals"

// publicDirs returns the module's library packages outside internal/ (commands,
// examples and test-only trees excluded).
func publicDirs(t *testing.T, root string) []string {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		base := d.Name()
		if rel != "." && (strings.HasPrefix(base, ".") || base == "internal" || base == "testdata" ||
			base == "cmd" || base == "examples" || base == "tests" || base == "capi" || base == "vendor") {
			return filepath.SkipDir
		}
		if _, err := os.Stat(filepath.Join(p, "go.mod")); err == nil && rel != "." {
			return filepath.SkipDir // another module
		}
		files, _ := filepath.Glob(filepath.Join(p, "*.go"))
		for _, f := range files {
			if !strings.HasSuffix(f, "_test.go") {
				dirs = append(dirs, rel)
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// TestNoInternalTypesInPublicAPI type-checks every public package and reports each
// exported name whose type (a function's parameters and results, a method, a
// field, a variable, an alias) mentions a type from an internal package.
func TestNoInternalTypesInPublicAPI(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "source", nil)
	var bad []string
	for _, dir := range publicDirs(t, root) {
		path := module
		if dir != "." {
			path += "/" + filepath.ToSlash(dir)
		}
		pkg, err := imp.(types.ImporterFrom).ImportFrom(path, root, 0)
		if err != nil {
			t.Fatalf("type-checking %s: %v", path, err)
		}
		scope := pkg.Scope()
		for _, name := range scope.Names() {
			obj := scope.Lookup(name)
			if !obj.Exported() {
				continue
			}
			where := path + "." + name
			if m := mention(obj.Type(), map[types.Type]bool{}, true); m != "" {
				bad = append(bad, where+" mentions "+m)
			}
			tn, ok := obj.(*types.TypeName)
			if !ok {
				continue
			}
			if named, ok := types.Unalias(tn.Type()).(*types.Named); ok && named.Obj().Pkg() == pkg {
				for i := 0; i < named.NumMethods(); i++ {
					m := named.Method(i)
					if m.Exported() {
						if s := mention(m.Type(), map[types.Type]bool{}, false); s != "" {
							bad = append(bad, where+"."+m.Name()+" mentions "+s)
						}
					}
				}
			}
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}

func internalPath(p string) bool {
	return strings.Contains(p, "/internal/") || strings.HasSuffix(p, "/internal")
}

// mention returns the first internal type t mentions, or "". For the declared
// type of a name (top), a struct's unexported fields do not count.
func mention(t types.Type, seen map[types.Type]bool, top bool) string {
	if seen[t] {
		return ""
	}
	seen[t] = true
	switch v := t.(type) {
	case *types.Alias:
		if p := v.Obj().Pkg(); p != nil && internalPath(p.Path()) {
			return v.Obj().Pkg().Path() + "." + v.Obj().Name()
		}
		return mention(types.Unalias(v), seen, top)
	case *types.Named:
		if p := v.Obj().Pkg(); p != nil && internalPath(p.Path()) {
			return p.Path() + "." + v.Obj().Name()
		}
		if args := v.TypeArgs(); args != nil {
			for i := 0; i < args.Len(); i++ {
				if s := mention(args.At(i), seen, false); s != "" {
					return s
				}
			}
		}
		if top {
			return mention(v.Underlying(), seen, true)
		}
		return ""
	case *types.Pointer:
		return mention(v.Elem(), seen, false)
	case *types.Slice:
		return mention(v.Elem(), seen, false)
	case *types.Array:
		return mention(v.Elem(), seen, false)
	case *types.Map:
		if s := mention(v.Key(), seen, false); s != "" {
			return s
		}
		return mention(v.Elem(), seen, false)
	case *types.Chan:
		return mention(v.Elem(), seen, false)
	case *types.Signature:
		for _, tup := range []*types.Tuple{v.Params(), v.Results()} {
			for i := 0; i < tup.Len(); i++ {
				if s := mention(tup.At(i).Type(), seen, false); s != "" {
					return s
				}
			}
		}
	case *types.Struct:
		for i := 0; i < v.NumFields(); i++ {
			f := v.Field(i)
			if !f.Exported() && !f.Embedded() {
				continue
			}
			if s := mention(f.Type(), seen, false); s != "" {
				return s
			}
		}
	case *types.Interface:
		for i := 0; i < v.NumMethods(); i++ {
			if s := mention(v.Method(i).Type(), seen, false); s != "" {
				return s
			}
		}
	}
	return ""
}
