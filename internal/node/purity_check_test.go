package node_test

import (
	"fmt"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// graph builds a package graph from sources (import path -> files). Paths
// under triad/ belong to this module; others with a dot in their first
// element are third-party, each its own module; an imported path without a
// dot that has no sources is the standard library.
func graph(t *testing.T, fset *token.FileSet, srcs map[string][]string) map[string]pkgInfo {
	t.Helper()
	g := map[string]pkgInfo{}
	for path, files := range srcs {
		info := pkgInfo{module: path}
		if path == module || strings.HasPrefix(path, module+"/") {
			info.module = module
		}
		for i, src := range files {
			name := fmt.Sprintf("%s%d.go", path[strings.LastIndex(path, "/")+1:], i)
			f, err := parser.ParseFile(fset, name, src, 0)
			if err != nil {
				t.Fatal(err)
			}
			info.files = append(info.files, f)
		}
		g[path] = info
	}
	for _, info := range g {
		for _, imp := range imports(info.files) {
			if _, ok := g[imp]; !ok && !strings.Contains(strings.Split(imp, "/")[0], ".") && !strings.HasPrefix(imp, module+"/") {
				g[imp] = pkgInfo{standard: true}
			}
		}
	}
	return g
}

func TestCheck(t *testing.T) {
	const root = "triad/internal/a"
	clean := `package a
import (
	"fmt"
	"math/rand/v2"
	"time"

	"google.golang.org/protobuf/encoding/protowire"
	"triad/internal/b"
)
var d = time.Second + b.D
func f(r *rand.Rand, now time.Time) {
	r2 := rand.New(rand.NewPCG(1, 2))
	fmt.Println(r.IntN(3), r2.Uint64(), now.Add(d), protowire.SizeVarint(1))
	time := now
	_ = time.After(now)
}`
	leaf := `package b
import "time"
const D = time.Millisecond`
	for _, tc := range []struct {
		name string
		srcs map[string][]string
		want []string
	}{
		{"clean", map[string][]string{
			root:               {clean},
			"triad/internal/b": {leaf},
			"google.golang.org/protobuf/encoding/protowire": {`package protowire
import "math"
func SizeVarint(v uint64) int { return int(math.Log2(float64(v)))/7 + 1 }`},
		}, nil},
		{"os two levels down", map[string][]string{
			root:               {`package a; import _ "triad/internal/b"`},
			"triad/internal/b": {`package b; import _ "triad/internal/c"`},
			"triad/internal/c": {`package c; import "os"; var F = os.Stdout`},
		}, []string{"triad/internal/a -> triad/internal/b -> triad/internal/c: c0.go:1: imports os"}},
		{"go statement two levels down", map[string][]string{
			root:               {`package a; import _ "triad/internal/b"`},
			"triad/internal/b": {`package b; import _ "triad/internal/c"`},
			"triad/internal/c": {"package c\nfunc F() {\n\tgo F()\n}"},
		}, []string{"triad/internal/a -> triad/internal/b -> triad/internal/c: c0.go:3: go statement"}},
		{"third party not allowed", map[string][]string{
			root:               {`package a; import _ "example.com/evil"`},
			"example.com/evil": {`package evil`},
		}, []string{"triad/internal/a -> example.com/evil: third-party package not on the allow-list"}},
		{"clock and global randomness", map[string][]string{
			root: {"package a\nimport \"time\"\nvar T = time.Now()",
				"package a\nimport clock \"time\"\nfunc F() { clock.Sleep(1) }",
				"package a\nimport \"math/rand/v2\"\nvar N = rand.IntN(6)",
				"package a\nimport . \"time\"\nvar S = Since",
				"package a\nimport (\n\t\"net/http\"\n\t\"sync/atomic\"\n\t\"math/rand\"\n)"},
		}, []string{
			"triad/internal/a: a0.go:3: uses time.Now",
			"triad/internal/a: a1.go:3: uses time.Sleep",
			"triad/internal/a: a2.go:3: uses math/rand/v2.IntN",
			"triad/internal/a: a3.go:2: dot-imports time",
			"triad/internal/a: a4.go:3: imports net/http",
			"triad/internal/a: a4.go:4: imports sync/atomic",
			"triad/internal/a: a4.go:5: imports math/rand",
		}},
		{"offloaded and waived", map[string][]string{
			root:                      {`package a; import (_ "triad/internal/store"; _ "github.com/google/btree")`},
			"triad/internal/store":    {`package store; import (_ "os"; _ "go.etcd.io/bbolt")`},
			"github.com/google/btree": {`package btree; import "sync"; var M sync.Mutex`},
		}, nil},
		{"waiver is for one finding only", map[string][]string{
			root:                      {`package a; import _ "github.com/google/btree"`},
			"github.com/google/btree": {`package btree; import ("os"; "sync"); var M sync.Mutex; var F = os.Stdout`},
		}, []string{"triad/internal/a -> github.com/google/btree: btree0.go:1: imports os"}},
		{"unknown package", map[string][]string{
			root: {`package a; import _ "triad/internal/ghost"`},
		}, []string{"triad/internal/a -> triad/internal/ghost: not in the package graph"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fset := token.NewFileSet()
			var got []string
			for _, v := range check(fset, graph(t, fset, tc.srcs), []string{root}) {
				got = append(got, v.String())
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(tc.want, "\n\t"))
			}
		})
	}
}

// TestCheckFixture runs the checker on real files: testdata/purity holds a
// root that imports a clean package that imports a dirty one.
func TestCheckFixture(t *testing.T) {
	fset := token.NewFileSet()
	const prefix = "triad/internal/node/testdata/purity/"
	g := map[string]pkgInfo{}
	dirs, err := filepath.Glob(filepath.Join("testdata", "purity", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no fixtures (%v)", err)
	}
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		info := pkgInfo{module: module}
		for _, name := range files {
			f, err := parser.ParseFile(fset, name, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			info.files = append(info.files, f)
		}
		g[prefix+filepath.Base(dir)] = info
	}
	for _, std := range []string{"time", "fmt"} {
		g[std] = pkgInfo{standard: true}
	}
	var got []string
	for _, v := range check(fset, g, []string{prefix + "root"}) {
		got = append(got, v.String())
	}
	chain := prefix + "root -> " + prefix + "clean -> " + prefix + "dirty: "
	want := []string{chain + "dirty.go:12: go statement", chain + "dirty.go:9: uses time.AfterFunc"}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("got\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(want, "\n\t"))
	}
}
