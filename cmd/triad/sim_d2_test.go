package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sim d2 --plot writes the figures of the experiments that ran, SVG or PNG
// by the extension, and says so; a path it could not write is refused
// before the run.
func TestSimD2Plot(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"d2.svg", "d2.png"} {
		plot := filepath.Join(dir, name)
		var out bytes.Buffer
		if err := runSimD2([]string{"--experiment", "locality", "--quick", "--seed", "1", "-q", "--plot", plot}, &out, os.Stderr); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out.String(), "figure written to "+plot) {
			t.Errorf("the run does not say where the figure went:\n%s", out.String())
		}
		b, err := os.ReadFile(plot)
		if err != nil || len(b) < 2_000 {
			t.Fatalf("%s: %d bytes, %v", plot, len(b), err)
		}
		if strings.HasSuffix(name, ".svg") && !bytes.Contains(b, []byte("Fig. 2: ")) {
			t.Errorf("%s has no Fig. 2", plot)
		}
		if strings.HasSuffix(name, ".png") && !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Errorf("%s is not a PNG", plot)
		}
	}
	var out, errb bytes.Buffer
	err := runSimD2([]string{"--experiment", "locality", "--quick", "--plot", filepath.Join(dir, "nope", "d2.png")}, &out, &errb)
	if err == nil || !strings.Contains(err.Error()+errb.String(), "no folder") || out.Len() != 0 {
		t.Errorf("--plot into a missing folder: %v, stdout %.200q", err, out.String())
	}
}
