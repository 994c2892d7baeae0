package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"triad/internal/e2e"

	"triad/internal/files"
)

// TestPutGetCommandsChunkLargeFiles runs `triad put` and `triad get` (the
// commands' own code, against real node processes) on a file of 2.5
// chunks: it is stored as three chunks and a manifest, read back whole,
// and --raw shows the manifest.
func TestPutGetCommandsChunkLargeFiles(t *testing.T) {
	d := e2e.StartDHash(t, 3, "--redundancy", "replicas")
	dir := t.TempDir()
	data := e2e.RandomBytes(e2e.NewRand(t), 2*1024*1024+512*1024)
	in := filepath.Join(dir, "in")
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := runPut([]string{in, "--addr", d.Nodes[0].Addr, "--chunk", "1048576"}, &out, &errOut); err != nil {
		t.Fatalf("triad put: %v (%s)", err, errOut.String())
	}
	key := strings.TrimSpace(out.String())
	got := filepath.Join(dir, "out")
	if err := runGet([]string{key, "--addr", d.Nodes[2].Addr, "-o", got}, &out, &errOut); err != nil {
		t.Fatalf("triad get: %v (%s)", err, errOut.String())
	}
	if b, err := os.ReadFile(got); err != nil || !bytes.Equal(b, data) {
		t.Fatalf("triad get wrote %d bytes (%v), want the %d put", len(b), err, len(data))
	}
	out.Reset()
	if err := runGet([]string{key, "--addr", d.Nodes[1].Addr, "--raw"}, &out, &errOut); err != nil {
		t.Fatalf("triad get --raw: %v", err)
	}
	m, err := files.ParseManifest(out.Bytes())
	if err != nil || len(m.Chunks) != 3 || m.Size != len(data) {
		t.Fatalf("--raw printed %q: %v; want a manifest of 3 chunks", out.String(), err)
	}
}
