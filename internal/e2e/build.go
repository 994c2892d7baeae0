package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// The tests run the triad binary, built once per test binary into binDir.
var (
	binDir    string
	buildOnce sync.Once
	triadBin  string
	buildErr  error
)

// Main runs the tests of m and removes the binary Build built, if any:
// a package's TestMain is os.Exit(e2e.Main(m)).
func Main(m *testing.M) int {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	return code
}

// Build builds the triad binary (cmd/triad) once and returns its path.
func Build(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "triad-e2e-")
		if buildErr != nil {
			return
		}
		triadBin = filepath.Join(binDir, "triad")
		out, err := exec.Command("go", "build", "-o", triadBin, "triad/cmd/triad").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return triadBin
}

// RepoRoot is the folder of the module under test (where its go.mod is),
// found from the test's working folder upwards.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			t.Fatalf("no go.mod above %s", dir)
		}
	}
}
