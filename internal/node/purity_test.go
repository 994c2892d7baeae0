package node_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestNodePackagesStaySansIO enforces the design's one hard rule: protocol
// code never touches sockets, files, wall-clock time, global randomness or
// goroutines. Only the drivers (net, sim) and commands may.
func TestNodePackagesStaySansIO(t *testing.T) {
	forbiddenImports := map[string]bool{"net": true, "os": true, "math/rand": true, "syscall": true, "io/ioutil": true}
	forbiddenCalls := []string{"time.Now(", "time.Sleep(", "time.After(", "time.AfterFunc(", "time.NewTimer(", "time.Tick(", "rand.IntN(", "rand.Uint64(", "rand.Float64(", "go func"}
	for _, pkg := range []string{"id", "wire", "node", "rpc", "ring", "merkle", "vivaldi", "dhash"} {
		dir := filepath.Join("..", pkg)
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no files (%v)", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			ast, err := parser.ParseFile(token.NewFileSet(), f, src, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range ast.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if forbiddenImports[p] {
					t.Errorf("%s imports %s", f, p)
				}
			}
			for _, call := range forbiddenCalls {
				if strings.Contains(string(src), call) {
					t.Errorf("%s uses %s", f, call)
				}
			}
		}
	}
}
