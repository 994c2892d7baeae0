package vfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// must fails the test on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func create(t *testing.T, fsys FS, name string) File {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	must(t, err)
	return f
}

func write(t *testing.T, f File, off int64, s string) {
	t.Helper()
	_, err := f.WriteAt([]byte(s), off)
	must(t, err)
}

// contents returns name's bytes, or "<missing>".
func contents(t *testing.T, fsys FS, name string) string {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return "<missing>"
	}
	must(t, err)
	defer f.Close()
	st, err := f.Stat()
	must(t, err)
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return string(b)
}

// TestCrashKeepsOnlyWhatWasSynced is the strict semantics: a power cut
// keeps file data as of the file's last Sync and directory entries as of
// the directory's last SyncDir.
func TestCrashKeepsOnlyWhatWasSynced(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, m *MemFS)
		want map[string]string // path → contents after the crash
	}{
		{"file synced, directory not: the file is lost", func(t *testing.T, m *MemFS) {
			f := create(t, m, "/d/a")
			write(t, f, 0, "data")
			must(t, f.Sync())
		}, map[string]string{"/d/a": "<missing>"}},
		{"directory synced, file not: the file is empty", func(t *testing.T, m *MemFS) {
			f := create(t, m, "/d/a")
			must(t, m.SyncDir("/d"))
			write(t, f, 0, "data")
		}, map[string]string{"/d/a": ""}},
		{"writes after the last sync are lost", func(t *testing.T, m *MemFS) {
			f := create(t, m, "/d/a")
			write(t, f, 0, "ab")
			must(t, f.Sync())
			write(t, f, 2, "cd")
			write(t, f, 0, "X")
			must(t, m.SyncDir("/d"))
		}, map[string]string{"/d/a": "ab"}},
		{"a truncation not synced is undone", func(t *testing.T, m *MemFS) {
			f := create(t, m, "/d/a")
			must(t, m.SyncDir("/d"))
			write(t, f, 0, "abcd")
			must(t, f.Sync())
			must(t, f.Truncate(1))
		}, map[string]string{"/d/a": "abcd"}},
		{"a removal not synced is undone", func(t *testing.T, m *MemFS) {
			f := create(t, m, "/d/a")
			write(t, f, 0, "abcd")
			must(t, f.Sync())
			must(t, m.SyncDir("/d"))
			must(t, m.Remove("/d/a"))
		}, map[string]string{"/d/a": "abcd"}},
		{"a removal synced is kept", func(t *testing.T, m *MemFS) {
			create(t, m, "/d/a")
			must(t, m.SyncDir("/d"))
			must(t, m.Remove("/d/a"))
			must(t, m.SyncDir("/d"))
		}, map[string]string{"/d/a": "<missing>"}},
		{"a rename not synced is undone", func(t *testing.T, m *MemFS) {
			f := create(t, m, "/d/a")
			write(t, f, 0, "x")
			must(t, f.Sync())
			must(t, m.SyncDir("/d"))
			must(t, m.Rename("/d/a", "/d/b"))
		}, map[string]string{"/d/a": "x", "/d/b": "<missing>"}},
		{"a rename synced is kept", func(t *testing.T, m *MemFS) {
			f := create(t, m, "/d/a")
			write(t, f, 0, "x")
			must(t, f.Sync())
			must(t, m.Rename("/d/a", "/d/b"))
			must(t, m.SyncDir("/d"))
		}, map[string]string{"/d/a": "<missing>", "/d/b": "x"}},
		{"MkdirAll alone: the new directories are lost", func(t *testing.T, m *MemFS) {
			must(t, m.MkdirAll("/x/y", 0o755))
			f := create(t, m, "/x/y/a")
			write(t, f, 0, "x")
			must(t, f.Sync())
			must(t, m.SyncDir("/x/y"))
		}, map[string]string{"/x/y/a": "<missing>"}},
		{"MkdirAllSynced: the new directories stay", func(t *testing.T, m *MemFS) {
			must(t, MkdirAllSynced(m, "/x/y"))
			f := create(t, m, "/x/y/a")
			write(t, f, 0, "x")
			must(t, f.Sync())
			must(t, m.SyncDir("/x/y"))
		}, map[string]string{"/x/y/a": "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMem()
			must(t, MkdirAllSynced(m, "/d"))
			tt.run(t, m)
			crashed := m.CrashClone()
			for name, want := range tt.want {
				if got := contents(t, crashed, name); got != want {
					t.Errorf("after the crash %s holds %q, want %q\nbefore:\n%s", name, got, want, m)
				}
			}
		})
	}
}

// TestOnSyncSeesTheStateBeforeTheSync: each hook call gets what a crash
// just before that sync leaves, and the crashed copy is independent.
func TestOnSyncSeesTheStateBeforeTheSync(t *testing.T) {
	m := NewMem()
	var seen []string
	m.OnSync(func(crashed *MemFS) {
		seen = append(seen, contents(t, crashed, "/a"))
	})
	f := create(t, m, "/a")
	must(t, m.SyncDir("/"))
	write(t, f, 0, "one")
	must(t, f.Sync())
	write(t, f, 3, "two")
	must(t, f.Sync())
	m.OnSync(nil)
	must(t, f.Sync())
	want := []string{"<missing>", "", "one"}
	if strings.Join(seen, ",") != strings.Join(want, ",") {
		t.Fatalf("hook saw %q, want %q", seen, want)
	}
	crashed := m.CrashClone()
	g, err := crashed.OpenFile("/a", os.O_RDWR, 0)
	must(t, err)
	write(t, g, 0, "ZZZ")
	if got := contents(t, m, "/a"); got != "onetwo" {
		t.Fatalf("writing the clone changed the original: %q", got)
	}
}

// TestSameBehaviour runs what the engine relies on against the OS and
// MemFS: the errors, reads past the end, listing order.
func TestSameBehaviour(t *testing.T) {
	for _, c := range []struct {
		name string
		fs   FS
		dir  string
	}{{"os", OS(), t.TempDir()}, {"mem", NewMem(), "/base"}} {
		t.Run(c.name, func(t *testing.T) {
			fsys, dir := c.fs, c.dir
			must(t, MkdirAllSynced(fsys, filepath.Join(dir, "sub")))
			a := filepath.Join(dir, "sub", "b")
			f := create(t, fsys, a)
			if _, err := fsys.OpenFile(a, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644); !errors.Is(err, fs.ErrExist) {
				t.Errorf("O_EXCL on an existing file: %v, want ErrExist", err)
			}
			if _, err := fsys.OpenFile(filepath.Join(dir, "nope"), os.O_RDWR, 0); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("opening a missing file: %v, want ErrNotExist", err)
			}
			must(t, WriteFullAt(f, [][]byte{[]byte("he"), nil, []byte("llo")}, 2))
			must(t, f.Sync())
			buf := make([]byte, 10)
			n, err := f.ReadAt(buf, 0)
			if n != 7 || err != io.EOF || string(buf[:n]) != "\x00\x00hello" {
				t.Errorf("ReadAt past the end: %d %v %q", n, err, buf[:n])
			}
			st, err := f.Stat()
			must(t, err)
			if st.Size() != 7 {
				t.Errorf("size %d, want 7", st.Size())
			}
			create(t, fsys, filepath.Join(dir, "sub", "a")).Close()
			ents, err := fsys.ReadDir(filepath.Join(dir, "sub"))
			must(t, err)
			if len(ents) != 2 || ents[0].Name() != "a" || ents[1].Name() != "b" {
				t.Errorf("ReadDir: %v", ents)
			}
			if err := fsys.Remove(filepath.Join(dir, "sub")); err == nil {
				t.Error("removed a directory that is not empty")
			}
			must(t, f.Close())
			if _, err := f.ReadAt(buf, 0); !errors.Is(err, fs.ErrClosed) {
				t.Errorf("reading a closed file: %v, want ErrClosed", err)
			}
			must(t, fsys.Rename(a, filepath.Join(dir, "c")))
			if _, err := fsys.Stat(a); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("renamed file still there: %v", err)
			}
			must(t, fsys.SyncDir(dir))
		})
	}
}

// TestInjectFailsTheChosenOperation: a failed sync leaves the data
// unsynced.
func TestInjectFailsTheChosenOperation(t *testing.T) {
	m := NewMem()
	boom := errors.New("boom")
	fsys := Inject(m, func(op Op, path string) error {
		if op == OpSync && strings.HasSuffix(path, "/a") {
			return boom
		}
		return nil
	})
	f := create(t, fsys, "/a")
	must(t, fsys.SyncDir("/"))
	write(t, f, 0, "x")
	if err := f.Sync(); !errors.Is(err, boom) {
		t.Fatalf("sync: %v, want the injected error", err)
	}
	if got := contents(t, m.CrashClone(), "/a"); got != "" {
		t.Fatalf("after a failed sync and a crash the file holds %q", got)
	}
}
