package soft

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// tailUses returns, as "file:line: what", every use of a ring's tail word in files
// that is not one of the two sanctioned ones: the load in ring.consumed (which
// carries the race detector's acquire) and the store in ring.consume (after its
// release). loads counts the atomic.LoadUint64 of the tail inside consumed.
func tailUses(fset *token.FileSet, files []*ast.File) (bad []string, loads int) {
	for _, f := range files {
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			name := fn.Name.Name
			if fn.Recv != nil && len(fn.Recv.List) == 1 {
				name = recvType(fn.Recv.List[0].Type) + "." + name
			}
			sanctioned := map[*ast.SelectorExpr]bool{}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) == 0 {
					return true
				}
				sel, ok := call.Args[0].(*ast.SelectorExpr)
				if !ok || sel.Sel.Name != "tail" {
					return true
				}
				switch {
				case name == "ring.consumed" && isAtomic(call.Fun, "LoadUint64"):
					sanctioned[sel] = true
					loads++
				case name == "ring.consume" && isAtomic(call.Fun, "StoreUint64"):
					sanctioned[sel] = true
				}
				return true
			})
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if ok && sel.Sel.Name == "tail" && !sanctioned[sel] {
					bad = append(bad, fset.Position(sel.Pos()).String()+": "+name+" uses the tail word")
				}
				return true
			})
		}
	}
	sort.Strings(bad)
	return bad, loads
}

func recvType(e ast.Expr) string {
	if s, ok := e.(*ast.StarExpr); ok {
		e = s.X
	}
	if id, ok := e.(*ast.Ident); ok {
		return id.Name
	}
	return "?"
}

func isAtomic(fun ast.Expr, name string) bool {
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "atomic"
}

// tailFields returns the struct types (by name) of files that declare a field tail.
func tailFields(files []*ast.File) []string {
	var names []string
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			ts, ok := n.(*ast.TypeSpec)
			if !ok {
				return true
			}
			if st, ok := ts.Type.(*ast.StructType); ok {
				for _, fld := range st.Fields.List {
					for _, id := range fld.Names {
						if id.Name == "tail" {
							names = append(names, ts.Name.Name)
						}
					}
				}
			}
			return true
		})
	}
	return names
}

// TestTailReadOnlyInConsumed: the producer reads the peer's tail only through
// ring.consumed, whose raceAcquire gives a completion the happens-before edge of the
// consumer's copy (see TestCompletionOrdersPlacement). A second, plain read of the
// tail at any call site would bring the race report back there; this scan of the
// package's sources (every platform's files) fails on one.
func TestTailReadOnlyInConsumed(t *testing.T) {
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatal("no source files found")
	}
	// The scan matches the field by name: it is sound while ring is the only type
	// with a field tail.
	if got := tailFields(files); len(got) != 1 || got[0] != "ring" {
		t.Fatalf("types with a field tail: %v, want only ring (rename the new field, or teach this scan the types)", got)
	}
	bad, loads := tailUses(fset, files)
	for _, b := range bad {
		t.Errorf("%s: read the tail through ring.consumed (its race acquire must come with every read)", b)
	}
	if loads != 1 {
		t.Errorf("ring.consumed loads the tail %d times, want once (has the scan lost track of the code?)", loads)
	}
}

// TestTailUsesFlagsStrayReads: the scan itself catches the reads it is meant to.
func TestTailUsesFlagsStrayReads(t *testing.T) {
	src := `package soft
func (r *ring) consumed() uint64 { t := atomic.LoadUint64(r.tail); raceAcquire(); return t }
func (r *ring) consume(n uint32) { atomic.StoreUint64(r.tail, 1) }
func (q *qp) stray1() uint64 { return atomic.LoadUint64(q.out.tail) }
func (q *qp) stray2() uint64 { return *q.out.tail }
func (r *ring) space() bool { p := r.tail; return p != nil }
func (r *ring) consumed2() uint64 { return atomic.LoadUint64(r.tail) }
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	bad, loads := tailUses(fset, []*ast.File{f})
	if len(bad) != 4 || loads != 1 {
		t.Errorf("flagged %d uses (want 4), %d sanctioned loads (want 1):\n%s", len(bad), loads, strings.Join(bad, "\n"))
	}
}
