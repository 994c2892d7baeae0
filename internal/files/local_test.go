package files

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckOutput: a path is writable if its folder takes a new file or
// the file opens for writing; the check leaves nothing behind.
func TestCheckOutput(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "old.txt")
	if err := os.WriteFile(existing, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	readOnly := filepath.Join(dir, "ro")
	if err := os.Mkdir(readOnly, 0o555); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "new.txt"), ""},
		{existing, ""},
		{dir, dir + " is a folder"},
		{filepath.Join(dir, "none", "f"), "cannot write " + filepath.Join(dir, "none", "f") + ": no folder " + filepath.Join(dir, "none")},
		{filepath.Join(readOnly, "f"), "cannot write " + filepath.Join(readOnly, "f") + ": "},
	} {
		err := CheckOutput(tc.path)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.want)) {
			if os.Geteuid() == 0 && strings.HasPrefix(tc.path, readOnly) {
				continue // root writes anywhere
			}
			t.Errorf("CheckOutput(%s): %v, want %q", tc.path, err, tc.want)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 2 {
		t.Errorf("the check left %v", entries)
	}
	if b, _ := os.ReadFile(existing); string(b) != "old" {
		t.Errorf("the check changed the file: %q", b)
	}
}

// TestWriteAtomicAndReadInput: a file written is read back whole, and
// "-" reads the standard input given.
func TestWriteAtomicAndReadInput(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := WriteAtomic(path, []byte("data")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path + ".partial"); !os.IsNotExist(err) {
		t.Errorf("partial file left: %v", err)
	}
	if b, err := ReadInput(path, strings.NewReader("stdin")); err != nil || string(b) != "data" {
		t.Errorf("file: %q, %v", b, err)
	}
	if b, err := ReadInput("-", strings.NewReader("stdin")); err != nil || string(b) != "stdin" {
		t.Errorf("stdin: %q, %v", b, err)
	}
}
