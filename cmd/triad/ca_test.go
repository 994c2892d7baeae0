package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"triad/internal/pki"
)

// triad ca makes a CA, issues node and client bundles that load, refuses
// to issue a name twice, and revokes: a bundle made after the revocation
// carries the CRL, and the revoked certificate no longer loads from it.
func TestCACommands(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ca")
	run := func(want int, args ...string) string {
		t.Helper()
		var out, errOut bytes.Buffer
		if code := run(args, &out, &errOut); code != want {
			t.Fatalf("triad %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, out.String(), errOut.String())
		}
		return out.String() + errOut.String()
	}
	run(0, "ca", "init", dir, "--name", "test ring")
	run(1, "ca", "init", dir)
	run(0, "ca", "issue", "node1", "--site", "site1", "--addr", "127.0.0.1:4001", "--ca", dir)
	run(0, "ca", "issue", "front1", "--site", "site1", "--ca", dir)
	run(2, "ca", "issue", "x", "--ca", dir) // no --site
	if out := run(1, "ca", "issue", "node1", "--site", "site1", "--ca", dir); !strings.Contains(out, "revoke it first") {
		t.Errorf("issuing node1 twice: %s", out)
	}
	b, err := pki.LoadBundle(filepath.Join(dir, "bundles", "node1"))
	if err != nil || b.Self.Addr != "127.0.0.1:4001" || b.Self.Site != "site1" {
		t.Fatalf("node1's bundle: %+v %v", b, err)
	}
	run(0, "ca", "revoke", "node1", "--ca", dir)
	run(0, "ca", "issue", "node1b", "--site", "site1", "--ca", dir, "--out", filepath.Join(t.TempDir(), "b"))
	// The operator copies the CRL into node1's bundle: it no longer loads.
	crl, err := os.ReadFile(filepath.Join(dir, pki.CRL))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bundles", "node1", pki.CRL), crl, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := pki.LoadBundle(filepath.Join(dir, "bundles", "node1")); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Errorf("a revoked bundle loaded: %v", err)
	}
}
