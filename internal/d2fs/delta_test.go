package d2fs

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"triad/internal/d2/key"
)

// countingBlocks counts the puts that reach a store.
type countingBlocks struct {
	*MemBlocks
	puts atomic.Int64
}

func (c *countingBlocks) Put(ctx context.Context, k key.Key, data []byte) error {
	c.puts.Add(1)
	return c.MemBlocks.Put(ctx, k, data)
}

func (c *countingBlocks) PutIf(ctx context.Context, k key.Key, prev [32]byte, data []byte) error {
	c.puts.Add(1)
	return c.MemBlocks.PutIf(ctx, k, prev, data)
}

// newCountingVolume is a volume of data blocks of dataBytes on a store
// that counts its puts.
func newCountingVolume(t *testing.T, dataBytes int) (*countingBlocks, key.Volume, *clock) {
	t.Helper()
	b := &countingBlocks{MemBlocks: NewMemBlocks()}
	c := newClock()
	vol, err := MkvolSized(context.Background(), b, testWriter(), c.Now(), dataBytes)
	if err != nil {
		t.Fatal(err)
	}
	return b, vol, c
}

// closeFile is a file created and written under close-to-open: its close
// commits.
func closeFile(t *testing.T, f *FS, path string, data []byte) {
	t.Helper()
	n := writeFile(t, f, path, data)
	if err := f.Flushed(context.Background(), n); err != nil {
		t.Fatalf("close %s: %v", path, err)
	}
}

// A close in a large directory writes the file's blocks and a superblock,
// not the directory's record and its ancestors' (issue 46: 18 blocks
// more per close in a directory of 1,000 entries), and every reader sees
// the tree the writer has: a fresh mount, a read-only mount that
// refreshes, fsck. Once the deltas outgrow a superblock, a full commit
// folds them in.
func TestSmallCommits(t *testing.T) {
	ctx := context.Background()
	b, vol, c := newCountingVolume(t, BlockBytes)
	w := mustOpen(t, b, vol, false, c)
	for i := range 300 {
		writeFile(t, w, fmt.Sprintf("a/big/f%03d", i), pattern(100, i))
	}
	if err := w.Close(ctx); err != nil { // a full commit
		t.Fatal(err)
	}
	w = mustOpen(t, b, vol, false, c)
	r := mustOpen(t, b, vol, true, c)
	tree(t, r) // loads every directory

	before := w.Stats()
	b.puts.Store(0)
	const closes = 20
	for i := range closes {
		closeFile(t, w, fmt.Sprintf("a/big/new%02d", i), pattern(100, 1000+i))
	}
	st := w.Stats()
	if got := st.SmallCommits - before.SmallCommits; got != closes {
		t.Fatalf("%d small commits for %d closes, want %d", got, closes, closes)
	}
	// Each close: the superblock, which holds the 100-byte file's entry
	// and so its bytes (InlineBytes).
	if got := b.puts.Load(); got != closes {
		t.Fatalf("%d puts for %d closes, want %d (a directory record rewritten?)", got, closes, closes)
	}
	// Changes of every kind in small commits: a rewrite, a rename across
	// directories, an unlink, a new directory with a file, an rmdir, a
	// symlink, attributes.
	closeFile(t, w, "a/big/f007", []byte("rewritten"))
	if err := w.Rename(ctx, mustWalk(t, w, "a/big"), "f008", mustWalk(t, w, "a"), "moved", false); err != nil {
		t.Fatal(err)
	}
	if err := w.Unlink(ctx, mustWalk(t, w, "a/big"), "f009"); err != nil {
		t.Fatal(err)
	}
	closeFile(t, w, "a/newdir/sub/x", []byte("deep"))
	if _, err := w.Mkdir(ctx, mustWalk(t, w, "a"), "gone", 0o700, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Rmdir(ctx, mustWalk(t, w, "a"), "gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Symlink(ctx, mustWalk(t, w, "a"), "link", "big/f001", 0, 0); err != nil {
		t.Fatal(err)
	}
	mode := uint32(0o600)
	if err := w.Setattr(ctx, mustWalk(t, w, "a/big/f010"), SetAttr{Mode: &mode}); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if st := w.Stats(); st.Commits != st.SmallCommits+before.Commits-before.SmallCommits {
		t.Fatalf("a full commit among %d; want small ones only (deltas still fit)", st.Commits-before.Commits)
	}
	want := tree(t, w)
	if got := tree(t, mustOpen(t, b, vol, true, c)); got != want {
		t.Fatalf("a fresh mount sees\n%s\nwant\n%s", got, want)
	}
	c.Advance(5 * time.Second)
	if err := r.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, r); got != want {
		t.Fatalf("the refreshed reader sees\n%s\nwant\n%s", got, want)
	}
	if a := r.Attr(mustWalk(t, r, "a/big/f010")); a.Mode != 0o600 {
		t.Fatalf("reader: mode %o, want 600", a.Mode)
	}
	checkClean(t, w, b.MemBlocks)

	// Past maxChain small commits, a full one.
	for i := range maxChain {
		closeFile(t, w, fmt.Sprintf("a/big/more%03d", i), pattern(10, i))
	}
	if st := w.Stats(); st.Commits == st.SmallCommits+before.Commits-before.SmallCommits {
		t.Fatalf("%d more closes and no full commit", maxChain)
	}
	want = tree(t, w)
	if got := tree(t, mustOpen(t, b, vol, true, c)); got != want {
		t.Fatalf("after the full commit a fresh mount sees\n%s\nwant\n%s", got, want)
	}
	c.Advance(5 * time.Second)
	if err := r.Tick(ctx); err != nil {
		t.Fatal(err)
	}
	if got := tree(t, r); got != want {
		t.Fatalf("after the full commit the refreshed reader sees\n%s\nwant\n%s", got, want)
	}
	checkClean(t, w, b.MemBlocks)
}

// checkClean checks the volume with fsck and, once the replaced blocks
// are past KeepOld, that the store holds exactly what the newest commit
// reaches.
func checkClean(t *testing.T, w *FS, mem *MemBlocks) {
	t.Helper()
	ctx := context.Background()
	rep, reach, err := w.Reachable(ctx)
	if err != nil || len(rep.Bad) > 0 {
		t.Fatalf("fsck: %v, bad %v", err, rep.Bad)
	}
	w.mu.Lock()
	for _, g := range w.garbage {
		for _, k := range g.keys {
			if reach[k] {
				t.Errorf("%v is garbage and reachable", k)
			}
		}
	}
	w.mu.Unlock()
	stored := map[key.Key]bool{}
	for _, k := range mem.Keys() {
		stored[k] = true
		if !reach[k] && !inGarbage(w, k) {
			t.Errorf("%v is in the store, neither reachable nor garbage", k)
		}
	}
	for k := range reach {
		if !stored[k] {
			t.Errorf("%v is reachable and not in the store", k)
		}
	}
}

func inGarbage(w *FS, k key.Key) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, g := range w.garbage {
		for _, gk := range g.keys {
			if gk == k {
				return true
			}
		}
	}
	return false
}

// A writer that dies after small commits leaves the deltas in the
// superblock; the next writer takes them over and carries them on: its
// own small commits keep them, and its full commit folds them into the
// records.
func TestSmallCommitsAfterACrash(t *testing.T) {
	ctx := context.Background()
	w, b, vol, c := newVolume(t)
	closeFile(t, w, "d/e/one", []byte("1"))
	closeFile(t, w, "d/two", []byte("2"))
	closeFile(t, w, "three", []byte("3"))
	want := tree(t, w)
	// The writer dies (no Close); its lease lapses.
	c.Advance(2 * time.Minute)
	w2 := mustOpen(t, b, vol, false, c)
	if got := tree(t, w2); got != want {
		t.Fatalf("the next writer sees\n%s\nwant\n%s", got, want)
	}
	closeFile(t, w2, "d/e/four", []byte("4"))
	want = tree(t, w2)
	if got := tree(t, mustOpen(t, b, vol, true, c)); got != want {
		t.Fatalf("after the next writer's small commit a reader sees\n%s\nwant\n%s", got, want)
	}
	if err := w2.Close(ctx); err != nil {
		t.Fatal(err)
	}
	r := mustOpen(t, b, vol, true, c)
	if got := tree(t, r); got != want {
		t.Fatalf("after the full commit a reader sees\n%s\nwant\n%s", got, want)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.deltas) != 0 || r.full != r.gen {
		t.Fatalf("after a clean unmount commit %d has deltas %v (full %d)", r.gen, r.deltas, r.full)
	}
}

// A writer that takes over after a crash and commits in full before it
// has loaded the directories the chain changes finds them (foldAll): the
// full commit keeps every change of the dead writer's small commits.
func TestFullCommitFoldsUnloadedDeltas(t *testing.T) {
	ctx := context.Background()
	w, b, vol, c := newVolume(t)
	closeFile(t, w, "a/b/c/one", []byte("1"))
	closeFile(t, w, "x/two", []byte("2"))
	if err := w.Rename(ctx, mustWalk(t, w, "a/b"), "c", mustWalk(t, w, "x"), "moved", false); err != nil {
		t.Fatal(err)
	}
	closeFile(t, w, "x/moved/three", []byte("3"))
	want := tree(t, w)
	c.Advance(2 * time.Minute) // the writer died; its lease lapsed
	w2 := mustOpen(t, b, vol, false, c)
	closeFile(t, w2, "top", []byte("4"))  // loads the root only
	if err := w2.Close(ctx); err != nil { // a full commit
		t.Fatal(err)
	}
	r := mustOpen(t, b, vol, true, c)
	got := tree(t, r)
	if want = strings.Replace(want, "/x dir\n", "/top 34\n/x dir\n", 1); got != want {
		t.Fatalf("after the new writer's full commit a reader sees\n%s\nwant\n%s", got, want)
	}
	if r.full != r.gen || len(r.deltas) != 0 {
		t.Fatalf("commit %d is not full (full %d, %d deltas)", r.gen, r.full, len(r.deltas))
	}
}
