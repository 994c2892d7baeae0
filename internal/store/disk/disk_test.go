package disk

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/store"
	"triad/internal/store/storetest"
	"triad/internal/vfs"
)

const crashChildEnv = "TRIAD_STORE_CRASH_CHILD"

func TestMain(m *testing.M) {
	if dir := os.Getenv(crashChildEnv); dir != "" {
		crashChild(dir)
		return
	}
	os.Exit(m.Run())
}

// crashChild writes objects to the store in dir until it is killed,
// printing each key once its put has returned (so it is durable), from four
// goroutines. Every fourth put does not wait and is not printed.
func crashChild(dir string) {
	d, err := Open(store.Options{Dir: dir})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var mu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	// A bound on the work, not a wait (so not testutil.WaitFor): the
	// parent kills this process long before; should it not, the process
	// stops writing by itself.
	deadline := time.Now().Add(30 * time.Second)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), uint64(w)))
			for i := 0; i < 250_000 && time.Now().Before(deadline); i++ {
				data, key := storetest.Blob(r, r.IntN(64<<10))
				ttl := time.Duration(10+r.IntN(110)) * time.Minute
				noWait := i%4 == 3
				if err := d.Put(key, data, time.Now().Add(ttl), store.PutOptions{NoWait: noWait}); err != nil {
					fmt.Fprintln(os.Stderr, err)
					os.Exit(1)
				}
				if !noWait {
					mu.Lock()
					fmt.Fprintln(out, key)
					out.Flush()
					mu.Unlock()
				}
			}
		}(w)
	}
	wg.Wait()
	os.Exit(0)
}

// TestCrashRecovery kills a writing child process with SIGKILL at random
// moments. After each kill, every acknowledged object must be readable and
// intact, no object may read back damaged, and the stored Merkle root must
// match the index.
func TestCrashRecovery(t *testing.T) {
	dir := t.TempDir()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 2))
	acked := map[id.ID]bool{}
	for round := 0; round < 20; round++ {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashChildEnv+"="+dir)
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := make(chan string, 1<<16)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				lines <- sc.Text()
			}
			close(lines)
		}()
		// Kill at a random moment once the child is writing.
		first, ok := <-lines
		if !ok {
			cmd.Wait()
			t.Fatalf("round %d: child wrote nothing: %s", round, stderr.String())
		}
		time.Sleep(time.Duration(r.IntN(300)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		n := 0
		for _, l := range append([]string{first}, drain(lines)...) {
			key, err := id.Parse(l, id.Bytes)
			if err != nil {
				continue // a line cut by the kill was never acknowledged
			}
			acked[key] = true
			n++
		}

		d, err := Open(store.Options{Dir: dir})
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		for key := range acked {
			if _, _, err := d.Get(key); err != nil {
				t.Fatalf("round %d: acknowledged object %v: %v", round, key.Short(), err)
			}
		}
		total := 0
		err = d.Keys(func(key id.ID) bool {
			total++
			if _, _, err := d.Get(key); err != nil {
				t.Errorf("round %d: stored object %v: %v", round, key.Short(), err)
			}
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := d.CheckTree(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		if q := d.Quarantined(); len(q) > 0 {
			t.Fatalf("round %d: quarantined %v", round, q)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: %d acknowledged this round, %d in all, %d stored", round, n, len(acked), total)
	}
}

func drain(c chan string) []string {
	var out []string
	for l := range c {
		out = append(out, l)
	}
	return out
}

// putSome stores n random objects in a fresh disk engine and closes it.
func putSome(t *testing.T, dir string, n int) map[id.ID][]byte {
	t.Helper()
	d, err := Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 7))
	objs := map[id.ID][]byte{}
	for i := 0; i < n; i++ {
		data, key := storetest.Blob(r, 100+r.IntN(2000))
		if err := d.Put(key, data, time.Now().Add(time.Hour), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		objs[key] = data
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return objs
}

func anyKey(objs map[id.ID][]byte) id.ID {
	for k := range objs {
		return k
	}
	return id.ID{}
}

// flip inverts one byte of key's data in its segment file.
func flip(t *testing.T, dir string, key id.ID) {
	t.Helper()
	for _, name := range segmentFiles(dir) {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.Index(b, key.Bytes()); i >= 0 {
			b[i+len(key.Bytes())+5] ^= 0x40
			if err := os.WriteFile(name, b, 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatalf("key %v not found in any segment", key)
}

func checkAll(t *testing.T, d *Disk, objs map[id.ID][]byte, except id.ID) {
	t.Helper()
	for key, data := range objs {
		if key == except {
			continue
		}
		got, _, err := d.Get(key)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("object %v: %v", key.Short(), err)
		}
	}
}

func TestFlippedByteIsDetectedNotServed(t *testing.T) {
	dir := t.TempDir()
	objs := putSome(t, dir, 50)
	victim := anyKey(objs)
	flip(t, dir, victim)

	d, err := Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if data, _, err := d.Get(victim); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("damaged object served: %d bytes, %v", len(data), err)
	}
	if _, err := d.Stat(victim); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("damaged object still indexed: %v", err)
	}
	if q := d.Quarantined(); len(q) != 1 || !strings.Contains(q[fmt.Sprintf("%x", victim.Bytes())], "checksum") {
		t.Fatalf("quarantine list %v", q)
	}
	checkAll(t, d, objs, victim)
	if s := d.Stats(); s.TreeKeys != len(objs)-1 {
		t.Fatalf("tree holds %d keys, want %d without the damaged one", s.TreeKeys, len(objs)-1)
	}
	if err := d.CheckTree(); err != nil {
		t.Fatal(err)
	}
}

// TestRebuildIndexSkipsDamage loses the index entirely: recovery rebuilds it
// from the segments, stepping over a damaged record in the middle.
func TestRebuildIndexSkipsDamage(t *testing.T) {
	dir := t.TempDir()
	objs := putSome(t, dir, 50)
	victim := anyKey(objs)
	flip(t, dir, victim)
	if err := os.Remove(filepath.Join(dir, indexFile)); err != nil {
		t.Fatal(err)
	}
	d, err := Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	checkAll(t, d, objs, victim)
	if _, _, err := d.Get(victim); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("damaged record was indexed: %v", err)
	}
	if err := d.CheckTree(); err != nil {
		t.Fatal(err)
	}
}

func TestTornTailIsCut(t *testing.T) {
	dir := t.TempDir()
	objs := putSome(t, dir, 20)
	segs := segmentFiles(dir)
	if len(segs) != 1 {
		t.Fatalf("%d segments, want 1", len(segs))
	}
	before, _ := os.Stat(segs[0])
	// Half of a record, as a crash in the middle of a write leaves it.
	data, key := storetest.Blob(rand.New(rand.NewPCG(8, 8)), 4000)
	rec := appendRecord(nil, record{key: key.Bytes(), expiry: time.Now().Add(time.Hour).UnixNano(), data: data})
	f, _ := os.OpenFile(segs[0], os.O_APPEND|os.O_WRONLY, 0)
	f.Write(rec[:len(rec)/2])
	f.Close()

	d, err := Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.Stat(segs[0])
	if after.Size() != before.Size() {
		t.Fatalf("segment is %d bytes after recovery, want %d", after.Size(), before.Size())
	}
	checkAll(t, d, objs, id.ID{})
	if _, _, err := d.Get(key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("torn record readable: %v", err)
	}
	// Writing resumes at the cut.
	if err := d.Put(key, data, time.Now().Add(time.Hour), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	d.Close()
	d, err = Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got, _, err := d.Get(key); err != nil || !bytes.Equal(got, data) {
		t.Fatalf("object written after the cut: %v", err)
	}
}

func TestOpenTwiceIsRefused(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := Open(store.Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Fatalf("second open of %s: %v", dir, err)
	}
}

// Every durable put waits for a group commit, which syncs its segment;
// the first also syncs the folder, as it made the segment file. A commit
// with nothing written since the last one syncs nothing.
func TestSyncsAreCounted(t *testing.T) {
	d, err := Open(store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r := rand.New(rand.NewPCG(1, 2))
	for i, want := range []int64{2, 3, 4} {
		data, key := storetest.Blob(r, 100)
		if err := d.Put(key, data, time.Now().Add(time.Hour), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := d.Stats().Syncs; got != want {
			t.Fatalf("after %d puts, one at a time: %d syncs, want %d", i+1, got, want)
		}
	}
}

// TestDiskFull fills a small tmpfs: the put that finds no room fails with
// store.ErrFull, and every object acknowledged before it stays readable, before
// and after a reopen.
func TestDiskFull(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=3m"); err != nil {
		t.Skipf("cannot mount a small tmpfs here: %v", err)
	}
	defer syscall.Unmount(dir, syscall.MNT_DETACH)
	d, err := Open(store.Options{Dir: dir, CheckpointEntries: 64})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 9))
	acked := map[id.ID][]byte{}
	for i := 0; i < 10_000; i++ {
		data, key := storetest.Blob(r, 1000+r.IntN(20_000))
		err = d.Put(key, data, time.Now().Add(time.Hour), store.PutOptions{})
		if err != nil {
			break
		}
		acked[key] = data
	}
	if !errors.Is(err, store.ErrFull) {
		t.Fatalf("filling a 3 MB disk: %v, want store.ErrFull", err)
	}
	t.Logf("%d objects stored before: %v", len(acked), err)
	checkAll(t, d, acked, id.ID{})
	d.Close() // may fail to checkpoint for want of room; the segments hold the data

	// Make room, as an operator would, and reopen.
	if err := syscall.Mount("tmpfs", dir, "tmpfs", syscall.MS_REMOUNT, "size=16m"); err != nil {
		t.Fatal(err)
	}
	d, err = Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	checkAll(t, d, acked, id.ID{})
	if err := d.CheckTree(); err != nil {
		t.Fatal(err)
	}
	data, key := storetest.Blob(r, 1000)
	if err := d.Put(key, data, time.Now().Add(time.Hour), store.PutOptions{}); err != nil {
		t.Fatalf("put after making room: %v", err)
	}
}

func TestWindowSizeIsFixed(t *testing.T) {
	dir := t.TempDir()
	putSome(t, dir, 3)
	if _, err := Open(store.Options{Dir: dir, Window: time.Hour}); err == nil || !strings.Contains(err.Error(), "window") {
		t.Fatalf("reopening with another window size: %v", err)
	}
	d, err := Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	d.Close()
}

// TestRecordInsideTornRecordIsNotIndexed tears a record whose data holds a
// whole valid record: recovery must cut the tail, not index the inner one.
func TestRecordInsideTornRecordIsNotIndexed(t *testing.T) {
	dir := t.TempDir()
	objs := putSome(t, dir, 5)
	segs := segmentFiles(dir)
	innerData, innerKey := storetest.Blob(rand.New(rand.NewPCG(3, 3)), 500)
	inner := appendRecord(nil, record{key: innerKey.Bytes(), expiry: time.Now().Add(time.Hour).UnixNano(), data: innerData})
	outer := appendRecord(nil, record{flags: flagOpaque, key: innerKey.Bytes(), expiry: time.Now().Add(time.Hour).UnixNano(), data: append(bytes.Repeat([]byte{0}, 100), inner...)})
	f, _ := os.OpenFile(segs[0], os.O_APPEND|os.O_WRONLY, 0)
	f.Write(outer[:len(outer)-10]) // torn just before its checksums
	f.Close()
	d, err := Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, _, err := d.Get(innerKey); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("record inside a torn record was indexed: %v", err)
	}
	checkAll(t, d, objs, id.ID{})
}

// TestCloseWithConcurrentPuts closes while writers are busy: Close returns,
// and each put either succeeded (and survives a reopen) or says closed.
func TestCloseWithConcurrentPuts(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	acked := map[id.ID][]byte{}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 5))
			for i := 0; i < 2000; i++ {
				data, key := storetest.Blob(r, 200)
				err := d.Put(key, data, time.Now().Add(time.Hour), store.PutOptions{})
				if err != nil {
					if !errors.Is(err, store.ErrClosed) {
						t.Errorf("put during close: %v", err)
					}
					return
				}
				mu.Lock()
				acked[key] = data
				mu.Unlock()
			}
		}(w)
	}
	time.Sleep(20 * time.Millisecond) // let the writers get going; any moment will do
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	d, err = Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	checkAll(t, d, acked, id.ID{})
}

// TestPutReplacesDamagedCopy damages stored copies: a put of the same
// opaque object finds the damage while comparing, quarantines the copy and
// stores its own; a whole object quarantined by a read is stored again by
// the next put. So a good copy fetched elsewhere can take a bad one's place.
func TestPutReplacesDamagedCopy(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	exp := time.Now().Add(time.Hour)
	fkey, frag := id.Key([]byte("a fragmented block")), bytes.Repeat([]byte("fragment"), 20)
	whole, wkey := storetest.Blob(rand.New(rand.NewPCG(9, 9)), 200)
	if err := d.Put(fkey, frag, exp, store.PutOptions{Opaque: true}); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(wkey, whole, exp, store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := d.Sync(); err != nil {
		t.Fatal(err)
	}
	flip(t, dir, fkey)
	flip(t, dir, wkey)

	if err := d.Put(fkey, frag, exp, store.PutOptions{Opaque: true}); err != nil {
		t.Fatalf("put over a damaged opaque copy: %v", err)
	}
	if _, _, err := d.Get(wkey); !errors.Is(err, store.ErrCorrupt) {
		t.Fatalf("damaged whole copy: %v, want store.ErrCorrupt", err)
	}
	if err := d.Put(wkey, whole, exp, store.PutOptions{}); err != nil {
		t.Fatalf("put over a quarantined copy: %v", err)
	}
	for key, want := range map[id.ID][]byte{fkey: frag, wkey: whole} {
		if got, _, err := d.Get(key); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("%v after its copy was replaced: %v", key.Short(), err)
		}
	}
	if q := d.Quarantined(); len(q) != 2 {
		t.Fatalf("quarantine list %v, want both damaged copies", q)
	}
	if err := d.CheckTree(); err != nil {
		t.Fatal(err)
	}
}

// A long group-commit interval (a node's --sync-period) does not hold a
// Close: the engine commits what was written and closes, without waiting
// out the interval, and the object is there after a reopen.
func TestCloseDoesNotWaitOutTheInterval(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(store.Options{Dir: dir, SyncInterval: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	data, key := storetest.Blob(r, 100)
	if err := d.Put(key, data, time.Now().Add(time.Hour), store.PutOptions{}); err != nil { // the first commit runs at once
		t.Fatal(err)
	}
	data, key = storetest.Blob(r, 100)
	if err := d.Put(key, data, time.Now().Add(time.Hour), store.PutOptions{NoWait: true}); err != nil { // the next is 10 s away
		t.Fatal(err)
	}
	start := time.Now()
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took >= 5*time.Second {
		t.Errorf("Close took %v: it waited out the 10 s interval", took)
	}
	d, err = Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if got, _, err := d.Get(key); err != nil || !bytes.Equal(got, data) {
		t.Errorf("after the reopen: %d bytes, %v", len(got), err)
	}
}

// A segment's file is written with zeros ahead of its records, so that a
// put's fdatasync changes no file metadata: puts within the zeros leave the
// file's length alone. A clean close cuts the zeros; the zeros a crash
// leaves are cut by recovery without being reported as a torn tail.
func TestSegmentsArePreallocated(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(9, 9))
	objs := map[id.ID][]byte{}
	var lengths []int64
	for range 20 {
		data, key := storetest.Blob(r, 100+r.IntN(2000))
		if err := d.Put(key, data, time.Now().Add(time.Hour), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		objs[key] = data
		fi, err := os.Stat(segmentFiles(dir)[0])
		if err != nil {
			t.Fatal(err)
		}
		lengths = append(lengths, fi.Size())
	}
	for i, n := range lengths {
		if n != vfs.ZeroChunk {
			t.Fatalf("segment file is %d bytes after put %d, want %d throughout: %v", n, i+1, vfs.ZeroChunk, lengths)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	seg := segmentFiles(dir)[0]
	closed, _ := os.Stat(seg)
	if closed.Size() >= vfs.ZeroChunk {
		t.Fatalf("segment file is %d bytes after a clean close: its zeros were not cut", closed.Size())
	}

	// A crash leaves the zeros: recovery cuts them, quietly.
	f, err := os.OpenFile(seg, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(make([]byte, 300000)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var logged bytes.Buffer
	log.SetOutput(&logged)
	defer log.SetOutput(os.Stderr)
	d, err = Open(store.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if logged.Len() > 0 {
		t.Errorf("recovery reported preallocated zeros as damage: %s", logged.String())
	}
	if fi, _ := os.Stat(seg); fi.Size() != closed.Size() {
		t.Errorf("segment is %d bytes after recovery, want %d", fi.Size(), closed.Size())
	}
	checkAll(t, d, objs, id.ID{})
}

// Zeros that do not fit are not an error: a put whose record fits is
// written past the file's end, as without preallocation, rather than
// refused for the megabyte ahead of it (a file system nearly full).
func TestPutSucceedsWhenTheZerosDoNotFit(t *testing.T) {
	var zeroWrites sync.Once
	full := errors.New("no space left on device")
	fsys := vfs.Inject(vfs.OS(), func(op vfs.Op, path string) error {
		var err error
		if op == vfs.OpWrite && strings.HasSuffix(path, ".seg") {
			zeroWrites.Do(func() { err = full }) // the first write of a new segment is its zeros
		}
		return err
	})
	d, err := OpenFS(fsys, store.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r := rand.New(rand.NewPCG(3, 3))
	objs := map[id.ID][]byte{}
	for i := range 3 { // the first with no room for its zeros; the next ones with
		data, key := storetest.Blob(r, 500)
		if err := d.Put(key, data, time.Now().Add(time.Hour), store.PutOptions{}); err != nil {
			t.Fatalf("put %d (the first with no room for the zeros): %v", i, err)
		}
		objs[key] = data
	}
	// The zeros made for the second put start past the first's record.
	checkAll(t, d, objs, id.ID{})
}

// Puts ready to run together share one group commit (gather). With one
// processor, as a node sharing cores runs, the first put's kick used to
// start the fdatasync before the others had written, so every round took
// two commits; now it takes one, bar a round where a write outlasted the
// runtime's tick and another thread took the processor meanwhile.
func TestCommitGathersTheWritesUnderWay(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	d, err := Open(store.Options{Dir: t.TempDir(), SyncInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r := rand.New(rand.NewPCG(1, 2))
	expiry := time.Now().Add(time.Hour)
	data, key := storetest.Blob(r, 100)
	if err := d.Put(key, data, expiry, store.PutOptions{}); err != nil { // makes the segment
		t.Fatal(err)
	}
	const rounds, together = 20, 8
	before := d.Stats().Syncs
	for range rounds {
		errs := make([]error, together)
		var wg sync.WaitGroup
		for i := range together {
			data, key := storetest.Blob(r, 100)
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[i] = d.Put(key, data, expiry, store.PutOptions{})
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
	}
	if syncs := d.Stats().Syncs - before; syncs > rounds*3/2 {
		t.Fatalf("%d rounds of %d puts ready together took %d fdatasyncs; want about one a round", rounds, together, syncs)
	}
}
