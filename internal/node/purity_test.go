package node_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// nodeLogic lists the node-logic packages: the deterministic state machines
// the drivers run. Their whole dependency closure must be sans-IO (see
// check). A package with required false is planned but may not exist yet:
// it is checked once its directory exists, and its absence is not an error.
// A required package whose directory is missing fails the test, so that a
// rename cannot silently drop a package from the check.
var nodeLogic = []struct {
	name     string // directory under internal/
	required bool
}{
	{"id", true}, {"wire", true}, {"node", true}, {"rpc", true},
	{"ring", true}, {"merkle", true}, {"vivaldi", true}, {"dhash", true},
	{"host", true}, {"maint", true}, {"cc", true}, {"tapestry", true}, {"d2", true},
}

// module is this module's path; its packages are always scanned.
const module = "triad"

// thirdParty lists the packages outside this module and the standard library
// that node logic may depend on, each with the reason it is safe. They are
// scanned by the same rule as ours; what they do that the rule forbids must
// be waived below or reached only through offloaded work.
var thirdParty = map[string]string{
	"google.golang.org/protobuf/encoding/protowire": "pure encoding of the protobuf wire format (wire's codec)",
	"google.golang.org/protobuf/internal/errors":    "protowire's error values",
	"google.golang.org/protobuf/internal/detrand":   "protobuf's per-binary output randomization (see waived)",
	"github.com/google/btree":                       "in-memory ordered map behind merkle.Mem; no goroutines, no clock",
}

// offloaded lists packages node logic imports but calls only from work it
// hands to env.Offload, which the tcp driver runs on its worker goroutines
// (the simulator runs it in place). They and everything under them are not
// scanned: doing I/O there is their job.
var offloaded = map[string]string{
	"github.com/klauspost/reedsolomon": "erasure coding; may start goroutines for large shards and reads CPU " +
		"features (cpuid); dhash calls Split/Encode/ReconstructData/Join only in Offload work " +
		"(put.go's split, get.go's join) and New once in dhash.New",
}

// waived lists forbidden things that clean-enough packages do, keyed by
// package and the finding's text, with the reason each is harmless.
var waived = map[[2]string]string{
	{"github.com/google/btree", "imports sync"}: "only for FreeList's mutex, never contended: a node's " +
		"btree is touched by its one event loop",
	{"google.golang.org/protobuf/internal/detrand", "imports os"}: "hashes the running binary once " +
		"to vary error-message spacing per build; fixed for a binary, so runs still repeat",
}

// forbiddenImports are the packages a node-logic package may not import
// directly; a path ending in "/" forbids the whole tree under it too.
var forbiddenImports = []string{
	"os", "os/", "net", "net/", "syscall", "io/ioutil", "sync", "sync/",
	"math/rand", "unsafe", "go.etcd.io/bbolt", "go.etcd.io/bbolt/", "golang.org/x/sys/",
}

// forbiddenFuncs are the package-level functions that read the wall clock,
// wait in real time or draw from the global random source. Methods on a
// seeded *rand.Rand and the constructors (rand.New, rand.NewPCG) are fine.
var forbiddenFuncs = map[string][]string{
	"time": {"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "NewTimer", "NewTicker", "Tick"},
	"math/rand/v2": {"Int", "Int32", "Int32N", "Int64", "Int64N", "IntN", "N", "Uint", "Uint32",
		"Uint32N", "Uint64", "Uint64N", "UintN", "Float32", "Float64", "ExpFloat64", "NormFloat64",
		"Perm", "Shuffle"},
}

// pkgInfo is one package of the dependency graph.
type pkgInfo struct {
	module   string      // module path; "" for the standard library
	standard bool        // standard library: trusted, neither scanned nor followed
	files    []*ast.File // the non-test Go files of this build
}

// violation is a forbidden thing reachable from node logic.
type violation struct {
	chain []string // root -> ... -> the package that does it
	pos   string   // file:line, or "" for a finding about the whole package
	what  string
}

func (v violation) String() string {
	s := strings.Join(v.chain, " -> ") + ": "
	if v.pos != "" {
		s += v.pos + ": "
	}
	return s + v.what
}

// check walks the dependency graph from roots, breadth first, and returns what
// the packages reached do that node logic may not. Packages of this module
// and third-party ones are scanned; third-party ones must be listed in
// thirdParty; the standard library is trusted; offloaded packages are
// neither scanned nor followed. Each violation names the shortest import
// chain from a root.
func check(fset *token.FileSet, pkgs map[string]pkgInfo, roots []string) []violation {
	var out []violation
	parent := map[string]string{}
	queue := slices.Clone(roots)
	for _, r := range roots {
		parent[r] = ""
	}
	chain := func(p string) []string {
		var c []string
		for ; p != ""; p = parent[p] {
			c = append(c, p)
		}
		slices.Reverse(c)
		return c
	}
	for len(queue) > 0 {
		path := queue[0]
		queue = queue[1:]
		info, ok := pkgs[path]
		switch {
		case !ok:
			out = append(out, violation{chain: chain(path), what: "not in the package graph"})
			continue
		case info.standard:
			continue
		case offloaded[path] != "" && !slices.Contains(roots, path):
			continue
		case info.module != module && thirdParty[path] == "":
			out = append(out, violation{chain: chain(path), what: "third-party package not on the allow-list"})
		}
		for _, f := range scan(fset, info.files) {
			if waived[[2]string{path, f.what}] == "" {
				f.chain = chain(path)
				out = append(out, f)
			}
		}
		for _, imp := range imports(info.files) {
			if _, seen := parent[imp]; !seen {
				parent[imp] = path
				queue = append(queue, imp)
			}
		}
	}
	return out
}

// imports returns the packages files import, sorted, without "C".
func imports(files []*ast.File) []string {
	var ps []string
	for _, f := range files {
		for _, s := range f.Imports {
			p, _ := strconv.Unquote(s.Path.Value)
			if p != "C" && !slices.Contains(ps, p) {
				ps = append(ps, p)
			}
		}
	}
	slices.Sort(ps)
	return ps
}

// scan returns what files do that the rule forbids, without chains.
func scan(fset *token.FileSet, files []*ast.File) []violation {
	var out []violation
	add := func(n ast.Node, what string) {
		p := fset.Position(n.Pos())
		out = append(out, violation{pos: fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line), what: what})
	}
	for _, f := range files {
		local := map[string]string{} // local name -> path, for packages with forbidden functions
		for _, s := range f.Imports {
			p, _ := strconv.Unquote(s.Path.Value)
			for _, bad := range forbiddenImports {
				if p == bad || strings.HasSuffix(bad, "/") && strings.HasPrefix(p, bad) {
					add(s, "imports "+p)
					break
				}
			}
			if _, ok := forbiddenFuncs[p]; !ok {
				continue
			}
			name := p[strings.LastIndex(p, "/")+1:]
			if p == "math/rand/v2" {
				name = "rand"
			}
			if s.Name != nil {
				name = s.Name.Name
			}
			if name == "." {
				add(s, "dot-imports "+p)
			}
			local[name] = p
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				add(n, "go statement")
			case *ast.SelectorExpr:
				x, ok := n.X.(*ast.Ident)
				// An identifier naming an import resolves to no object;
				// a local variable that shadows it does.
				if !ok || x.Obj != nil || local[x.Name] == "" {
					return true
				}
				if p := local[x.Name]; slices.Contains(forbiddenFuncs[p], n.Sel.Name) {
					add(n, "uses "+p+"."+n.Sel.Name)
				}
			}
			return true
		})
	}
	return out
}

// goPackage is the part of `go list -json` output load reads.
type goPackage struct {
	ImportPath string
	Dir        string
	Standard   bool
	Module     *struct{ Path string }
	GoFiles    []string
	CgoFiles   []string
	Imports    []string
	Error      *struct{ Err string }
}

// goList runs `go list -json` with args and returns the packages it
// describes; a package go list could not load fails the test.
func goList(t *testing.T, args ...string) []goPackage {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-json"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []goPackage
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p goPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		if p.Error != nil {
			t.Fatalf("go list %s: %s", p.ImportPath, p.Error.Err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// load lists the dependency closure of pkgs with the go command and parses
// every package outside the standard library.
func load(t *testing.T, fset *token.FileSet, pkgs []string) map[string]pkgInfo {
	t.Helper()
	graph := map[string]pkgInfo{}
	for _, p := range goList(t, append([]string{"-deps", "--"}, pkgs...)...) {
		info := pkgInfo{standard: p.Standard}
		if p.Module != nil {
			info.module = p.Module.Path
		}
		if !p.Standard {
			for _, name := range append(p.GoFiles, p.CgoFiles...) {
				f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, 0)
				if err != nil {
					t.Fatal(err)
				}
				info.files = append(info.files, f)
			}
		}
		graph[p.ImportPath] = info
	}
	return graph
}

// roots returns the import paths of the node-logic packages that exist,
// failing the test for a required one that does not.
func roots(t *testing.T) []string {
	t.Helper()
	var rs []string
	for _, p := range nodeLogic {
		_, err := os.Stat(filepath.Join("..", p.name))
		switch {
		case err == nil:
			rs = append(rs, module+"/internal/"+p.name)
		case !errors.Is(err, os.ErrNotExist) || p.required:
			t.Errorf("node-logic package %s: %v", p.name, err)
		}
	}
	return rs
}

// TestNodePackagesStaySansIO enforces the design's one hard rule: protocol
// code never touches sockets, files, wall-clock time, global randomness or
// goroutines, and neither does anything it imports from this module or
// from a third party. Only the drivers (tcp, sim), the storage engine (in
// offloaded work) and commands may.
func TestNodePackagesStaySansIO(t *testing.T) {
	fset := token.NewFileSet()
	rs := roots(t)
	graph := load(t, fset, rs)
	for _, v := range check(fset, graph, rs) {
		t.Error(v)
	}
	var reached []string
	for p, info := range graph {
		if !info.standard {
			reached = append(reached, p)
		}
	}
	slices.Sort(reached)
	t.Logf("closure outside the standard library: %s", strings.Join(reached, " "))
}
