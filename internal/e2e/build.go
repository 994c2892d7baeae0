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
