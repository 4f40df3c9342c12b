// Package archtest checks the shape of the repository: the top-level
// layout, and that imports point down the layers (marks → crdt → question →
// persist → sync → examples), with automerge behind crdt alone.
package archtest

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/accord-crdt/accord"

func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestTopLevelLayout(t *testing.T) {
	r := root(t)
	for _, p := range []string{"crdt", "sync", "question", "marks", "persist", "examples", "docs",
		"go.mod", "go.sum", "Makefile", "LICENSE", "README.md", ".ci/run", "docs/CONFORMANCE.md"} {
		if _, err := os.Stat(filepath.Join(r, p)); err != nil {
			t.Errorf("missing %s", p)
		}
	}
	mod, err := os.ReadFile(filepath.Join(r, "go.mod"))
	if err != nil || !strings.HasPrefix(string(mod), "module "+module+"\n") {
		t.Errorf("go.mod must declare module %s", module)
	}
	// sync/ is a folder of sub-packages, never a package named sync.
	matches, _ := filepath.Glob(filepath.Join(r, "sync", "*.go"))
	if len(matches) > 0 {
		t.Errorf("sync/ must hold only sub-packages, found %v", matches)
	}
}

// imports maps each package directory (relative, slash-separated) to the
// imports of its non-test files.
func imports(t *testing.T) map[string]map[string]bool {
	t.Helper()
	r := root(t)
	out := map[string]map[string]bool{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(r, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != r {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(r, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		if out[rel] == nil {
			out[rel] = map[string]bool{}
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			out[rel][p] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func under(dir, prefix string) bool { return dir == prefix || strings.HasPrefix(dir, prefix+"/") }

func TestImportsPointDown(t *testing.T) {
	pkgs := imports(t)
	if len(pkgs) < 10 {
		t.Fatalf("found only %d packages; is the walk broken?", len(pkgs))
	}
	for dir, ims := range pkgs {
		for im := range ims {
			switch {
			case strings.HasPrefix(im, "github.com/automerge/automerge-go") && !under(dir, "crdt"):
				t.Errorf("%s imports automerge directly; only crdt may", dir)
			case under(dir, "marks") && strings.Contains(im, "."):
				t.Errorf("marks must stay pure values; it imports %s", im)
			case under(dir, "question") && (strings.HasPrefix(im, "go.etcd.io/bbolt") || im == "net/http" ||
				strings.HasPrefix(im, "github.com/gorilla/") || strings.HasPrefix(im, module+"/sync") ||
				strings.HasPrefix(im, module+"/persist/")):
				t.Errorf("question must do no network or bbolt I/O and see storage only through persist; it imports %s", im)
			case dir == "persist" && strings.HasPrefix(im, module+"/"):
				t.Errorf("the persist contract imports nothing of the project; it imports %s", im)
			case (under(dir, "crdt") || under(dir, "marks")) && strings.HasPrefix(im, module+"/") &&
				!strings.HasPrefix(im, module+"/marks") && !strings.HasPrefix(im, module+"/crdt"):
				t.Errorf("%s must not import upward: %s", dir, im)
			case !under(dir, "examples") && strings.HasPrefix(im, module+"/examples"):
				t.Errorf("%s imports an example: %s", dir, im)
			}
		}
	}
}

// TestPlannerStaysAProduct: the Planner integration (question/planner and
// its packages) is a product on top of the library, not a part of it. No
// package outside it imports it but the examples, which wire it to the
// transports: sync/mcp serves tools of any kind, sync/cluster runs any
// host work on the owner, and the hosts pass the Planner's in.
func TestPlannerStaysAProduct(t *testing.T) {
	const planner = module + "/question/planner"
	for dir, ims := range imports(t) {
		if under(dir, "question/planner") || under(dir, "examples") {
			continue
		}
		for im := range ims {
			if im == planner || strings.HasPrefix(im, planner+"/") {
				t.Errorf("%s imports the Planner (%s); only the examples may", dir, im)
			}
		}
	}
}
