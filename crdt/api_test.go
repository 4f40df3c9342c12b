package crdt

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestExportedAPIHidesAutomerge: no exported function, method, type,
// field, constant or variable of this package names an automerge-go type,
// so callers depend on this package's types alone and the binding can be
// replaced behind it.
func TestExportedAPIHidesAutomerge(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var leaks []string
	mentions := func(where string, n ast.Node) {
		if n == nil {
			return
		}
		ast.Inspect(n, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == "automerge" {
					leaks = append(leaks, where+": automerge."+sel.Sel.Name)
				}
			}
			return true
		})
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv != nil {
					recv := d.Recv.List[0].Type
					if star, ok := recv.(*ast.StarExpr); ok {
						recv = star.X
					}
					if id, ok := recv.(*ast.Ident); ok && !id.IsExported() {
						continue
					}
				}
				mentions(name+": func "+d.Name.Name, d.Type)
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					switch s := spec.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, fl := range st.Fields.List {
								for _, n := range fl.Names {
									if n.IsExported() {
										mentions(name+": "+s.Name.Name+"."+n.Name, fl.Type)
									}
								}
							}
							continue
						}
						mentions(name+": type "+s.Name.Name, s.Type)
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								mentions(name+": "+n.Name, s.Type)
							}
						}
					}
				}
			}
		}
	}
	for _, l := range leaks {
		t.Error("exported API names an automerge type: " + l)
	}
}
