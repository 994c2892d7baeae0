package powercut

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"

	"triad/internal/vfs"
)

// read returns name's bytes on fsys, or "<missing>".
func read(t *testing.T, fsys vfs.FS, name string) string {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return "<missing>"
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, st.Size())
	if _, err := f.ReadAt(b, 0); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	return string(b)
}

// TestRecorder: a point before every sync, with the state of that moment
// and the files as synced; none while cut; a last one after the workload.
func TestRecorder(t *testing.T) {
	acked := 0
	rec := New(func() int { return acked })
	mem := vfs.NewMem()
	if err := vfs.MkdirAllSynced(mem, "/d"); err != nil {
		t.Fatal(err)
	}
	rec.Record(mem)
	f, err := mem.OpenFile("/d/f", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	sync := func() {
		t.Helper()
		if err := f.Sync(); err != nil {
			t.Fatal(err)
		}
	}
	write := func(s string, off int64) {
		t.Helper()
		if _, err := f.WriteAt([]byte(s), off); err != nil {
			t.Fatal(err)
		}
	}
	if err := mem.SyncDir("/d"); err != nil { // point 0: f not named yet
		t.Fatal(err)
	}
	write("one", 0)
	sync() // point 1: f named, empty
	acked++
	write("two", 3)
	cut := rec.Cut(mem) // "one" synced, "two" not
	sync()              // not recorded
	if got := read(t, cut.FS.CrashClone(), "/d/f"); got != "one" || cut.State != 1 {
		t.Errorf("cut: %q with %d acknowledged, want \"one\" with 1", got, cut.State)
	}
	rec.Record(mem)
	acked++
	write("three", 6)
	sync() // point 2: "onetwo" synced
	acked++
	rec.Last(mem) // point 3: all synced
	if now := rec.Now(mem); read(t, now.FS, "/d/f") != "onetwothree" || now.State != 3 {
		t.Errorf("now: %q with %d acknowledged", read(t, now.FS, "/d/f"), now.State)
	}
	want := []struct {
		data  string
		acked int
	}{{"<missing>", 0}, {"", 0}, {"onetwo", 2}, {"onetwothree", 3}}
	points := rec.Points()
	if len(points) != len(want) {
		t.Fatalf("%d points, want %d", len(points), len(want))
	}
	for i, p := range points {
		if got := read(t, p.FS.CrashClone(), "/d/f"); got != want[i].data || p.State != want[i].acked {
			t.Errorf("point %d: %q with %d acknowledged, want %q with %d", i, got, p.State, want[i].data, want[i].acked)
		}
	}
}

// TestCommittedAndRestore: a bbolt file as last committed, from an open
// database or from the file, put back by Restore; nil when there is none.
func TestCommittedAndRestore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.db")
	if b, err := Committed(nil, path); b != nil || err != nil {
		t.Fatalf("no file: %d bytes, %v; want nil, nil", len(b), err)
	}
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	put := func(v string) {
		t.Helper()
		if err := db.Update(func(tx *bolt.Tx) error {
			b, err := tx.CreateBucketIfNotExists([]byte("b"))
			if err != nil {
				return err
			}
			return b.Put([]byte("k"), []byte(v))
		}); err != nil {
			t.Fatal(err)
		}
	}
	put("first")
	open, err := Committed(db, path)
	if err != nil {
		t.Fatal(err)
	}
	put("second")
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	closed, err := Committed(db, path) // closed: read from the file
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		data []byte
		want string
	}{{open, "first"}, {closed, "second"}} {
		if err := Restore(path, c.data); err != nil {
			t.Fatal(err)
		}
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		var got []byte
		err = db.View(func(tx *bolt.Tx) error { got = bytes.Clone(tx.Bucket([]byte("b")).Get([]byte("k"))); return nil })
		if err := errors.Join(err, db.Close()); err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("restored %q, want %q", got, c.want)
		}
	}
	if err := Restore(path, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("Restore(nil) left the file: %v", err)
	}
}
