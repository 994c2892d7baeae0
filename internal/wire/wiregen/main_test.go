package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyWire copies internal/wire's sources, schema and registry into a
// temporary folder, for run to write into.
func copyWire(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "testdata"), 0o755); err != nil {
		t.Fatal(err)
	}
	paths, _ := filepath.Glob("../*.go")
	for _, p := range append(paths, "../schema.proto", "../testdata/types.txt") {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel("..", p)
		if err := os.WriteFile(filepath.Join(dir, rel), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestCommittedCodeIsGenerated: what is committed is what wiregen writes
// from the declarations (CI checks the same with go generate).
func TestCommittedCodeIsGenerated(t *testing.T) {
	dir := copyWire(t)
	if err := run(dir); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{genFile, "schema.proto", "testdata/types.txt"} {
		want, _ := os.ReadFile(filepath.Join("..", f))
		got, _ := os.ReadFile(filepath.Join(dir, f))
		if string(got) != string(want) {
			t.Errorf("%s is not what wiregen writes: run go generate ./internal/wire", f)
		}
	}
}

// TestNewMessageIsOneDeclaration: a message declared with its tags gets its
// constant, its table line, its codec, its schema entry and its registry
// line.
func TestNewMessageIsOneDeclaration(t *testing.T) {
	dir := copyWire(t)
	decl := "package wire\n\n// TapGreet greets a node.\n//\n//wire:msg 383 node\ntype TapGreet struct {\n\tName  string `wire:\"1,max=MaxTextBytes\"`\n\tLevel uint32 `wire:\"2\"`\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "hello.go"), []byte(decl), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(dir); err != nil {
		t.Fatal(err)
	}
	read := func(f string) string { b, _ := os.ReadFile(filepath.Join(dir, f)); return string(b) }
	for f, want := range map[string][]string{
		genFile: {"TypeTapGreet", `{TypeTapGreet, "TapGreet", RoleNode, false, newOf[TapGreet]}`,
			"func (m *TapGreet) encode(", "func (m *TapGreet) decodeField(", "func (m *TapGreet) clone() Msg"},
		"schema.proto":       {"TYPE_TAP_GREET = 383;", "message TapGreet { string name = 1; uint32 level = 2; }"},
		"testdata/types.txt": {"\n383 tapestry TapGreet\n"},
	} {
		for _, w := range want {
			if !strings.Contains(read(f), w) {
				t.Errorf("%s lacks %q", f, w)
			}
		}
	}
}

// TestBadDeclarationsAreRefused: every field in error is named at once.
func TestBadDeclarationsAreRefused(t *testing.T) {
	dir := copyWire(t)
	decl := "package wire\n\n//wire:msg 383 node\ntype TapBad struct {\n\tNoTag uint32\n\tA, B uint64 `wire:\"2\"`\n\tC chan int `wire:\"3\"`\n}\n\n//wire:msg 20 node\ntype TapTaken struct{}\n"
	if err := os.WriteFile(filepath.Join(dir, "bad.go"), []byte(decl), 0o644); err != nil {
		t.Fatal(err)
	}
	err := run(dir)
	if err == nil {
		t.Fatal("accepted")
	}
	for _, w := range []string{"TapBad.NoTag: no wire tag", "TapBad: declare each field on its own line", "TapBad.C: "} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
}
