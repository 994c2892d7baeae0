package fsadmin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"triad/internal/d2/key"
	"triad/internal/d2client"
	"triad/internal/d2fs"
)

// The commands on a PATH, as a user runs them one after another: each
// opens the volume, changes it and closes (which commits), and the next
// sees the change. A path that is not there is named, a move out of the
// volume is refused, and the reader needs no key.
func TestVolumeCommands(t *testing.T) {
	ctx := context.Background()
	b := newStore()
	keyFile := filepath.Join(t.TempDir(), "v.key")
	if _, err := Mkvol(ctx, b, "v", keyFile, d2fs.DataBlockBytes); err != nil {
		t.Fatal(err)
	}
	write := func(do func(v *Volume) error) {
		t.Helper()
		v, err := OpenVolume(ctx, b, "v:/", keyFile, true)
		if err != nil {
			t.Fatal(err)
		}
		if err := errors.Join(do(v), v.Close()); err != nil {
			t.Fatal(err)
		}
	}
	write(func(v *Volume) error { return v.Mkdir("v:/d") })
	write(func(v *Volume) error { return v.Put("v:/d/a", strings.NewReader("hello")) })
	write(func(v *Volume) error { return v.Move("v:/d/a", "/b") })
	write(func(v *Volume) error { return v.Put("v:/gone", strings.NewReader("x")) })
	write(func(v *Volume) error { return v.Remove("v:/gone") })

	r, err := OpenVolume(ctx, b, "v", "", false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var names []string
	ents, err := r.List("v:/")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		names = append(names, fmt.Sprintf("%s %v %d", e.Name, FileMode(e.Attr), e.Size))
	}
	if got, want := strings.Join(names, ", "), "b -rw-r--r-- 5, d drwxr-xr-x 0"; got != want {
		t.Fatalf("ls v:/ = %s, want %s", got, want)
	}
	if ents, err := r.List("v:/b"); err != nil || len(ents) != 1 || ents[0].Name != "b" || TypeName(ents[0].Type) != "file" {
		t.Fatalf("ls of a file = %+v, %v", ents, err)
	}
	var out bytes.Buffer
	if err := r.Get("v:/b", &out); err != nil || out.String() != "hello" {
		t.Fatalf("get v:/b = %q, %v", out.String(), err)
	}
	if _, err := r.Walk("v:/d/a"); err == nil || err.Error() != "v:/d/a: no such file or directory" {
		t.Fatalf("walk of a moved file: %v", err)
	}
	if err := r.Move("v:/b", "w:/b"); err == nil || !strings.Contains(err.Error(), "not a path in volume v") {
		t.Fatalf("move to another volume: %v", err)
	}
	if err := r.Get("v:/d", &out); !errors.Is(err, syscall.EISDIR) || !strings.HasPrefix(err.Error(), "v:/d: ") {
		t.Fatalf("get of a directory: %v", err)
	}
	if _, err := OpenVolume(ctx, b, "v:/", filepath.Join(t.TempDir(), "none.key"), true); err == nil || !strings.Contains(err.Error(), "holds no key for volume v") {
		t.Fatalf("a writer without a key: %v", err)
	}
}

// The hints name what the user can do, and an unmount that would drop
// changes lists them, at most 50.
func TestExplainAndPendingWarning(t *testing.T) {
	for err, want := range map[error]string{
		d2client.ErrNoD2:     "run no D2: give nodes started with --d2",
		d2client.ErrSettling: "D2's ring is settling",
		d2client.ErrNoNode:   "listening at --addr n1,n2?",
		d2fs.ErrLeased:       "write through the mount, or mount --ro",
		errors.New("other"):  "other",
		&d2client.JoiningError{Addrs: []string{"n1"}}: "D2 runs on n1 but is still joining",
	} {
		got := Explain(fmt.Errorf("op: %w", err), "n1,n2")
		if !strings.Contains(got.Error(), want) || !errors.Is(got, err) {
			t.Errorf("Explain(%v) = %v, want it to say %q and wrap it", err, got, want)
		}
	}
	if Explain(nil, "n") != nil {
		t.Error("Explain(nil) is an error")
	}
	var pending []string
	for i := range 60 {
		pending = append(pending, fmt.Sprintf("f%d", i))
	}
	w := PendingWarning("/mnt", "the lease was lost", pending)
	if !strings.Contains(w, "these 60 changed paths") || !strings.Contains(w, "/mnt/f49\n") || strings.Contains(w, "/mnt/f50\n") || !strings.Contains(w, "and 10 more") {
		t.Fatalf("PendingWarning:\n%s", w)
	}
}

// hidingStore lists none of a range's keys for its first hide Latest
// calls: holders that have not settled.
type hidingStore struct {
	*memStore
	hide int
}

func (h *hidingStore) Latest(ctx context.Context, lo, hi key.Key) (key.Key, []byte, error) {
	if lo != hi && h.hide > 0 {
		h.hide--
		return key.Key{}, nil, d2fs.ErrNotFound
	}
	return h.memStore.Latest(ctx, lo, hi)
}

// A named volume whose superblock is not listed yet (a ring settling
// after mkvol) is opened once it is, after one notice; one never listed
// is an error naming the wait.
func TestOpenNamedWaitsForTheSuperblock(t *testing.T) {
	ctx := context.Background()
	m := newStore()
	vol, err := Mkvol(ctx, m, "v", filepath.Join(t.TempDir(), "v.key"), d2fs.DataBlockBytes)
	if err != nil {
		t.Fatal(err)
	}
	b := &hidingStore{memStore: m, hide: 2}
	notices := 0
	f, err := OpenNamed(ctx, b, "v", vol, true, d2fs.DefaultConfig(), 10*time.Second, func() { notices++ })
	if err != nil || notices != 1 || b.hide != 0 {
		t.Fatalf("open while the superblock was hidden twice: %v, %d notices, %d hides left", err, notices, b.hide)
	}
	f.Close(ctx)
	b.hide = 1 << 30
	if _, err := OpenNamed(ctx, b, "v", vol, true, d2fs.DefaultConfig(), time.Second, nil); !errors.Is(err, d2fs.ErrNoVolume) || !strings.Contains(err.Error(), "no holder has listed its superblock in 1s") {
		t.Fatalf("a superblock never listed: %v", err)
	}
}
