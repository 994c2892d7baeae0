package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestScanTree plants functions in a temporary tree: a long one is listed,
// a long dispatch switch is listed as dispatch, a short one, a test file
// and testdata are not.
func TestScanTree(t *testing.T) {
	body := func(n int) string { return strings.Repeat("\tx++\n", n) }
	dir := t.TempDir()
	write := func(name, src string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("a.go", "package a\n\nvar x int\n\n"+
		"func long() {\n"+body(100)+"}\n\n"+ // 102 lines
		"func fits() {\n"+body(98)+"}\n\n"+ // 100 lines
		"type T struct{}\n\nfunc (*T) handle(v any) {\n\tfor {\n\t\tswitch v.(type) {\n\t\tcase int:\n"+body(100)+"\t\t}\n\t}\n}\n")
	write("a_test.go", "package a\n\nfunc testLong() {\n"+body(200)+"}\n")
	write("testdata/b.go", "package b\n\nvar x int\n\nfunc long() {\n"+body(200)+"}\n")
	got, err := scanTree(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d long functions, want 2: %+v", len(got), got)
	}
	if g := got[0]; g.name != "long" || g.lines != 102 || g.dispatch || g.pos.Line != 5 {
		t.Errorf("planted long function: got %+v", g)
	}
	if g := got[1]; g.name != "T.handle" || g.lines != 107 || !g.dispatch {
		t.Errorf("planted dispatch: got %+v", g)
	}
}
