package workload

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"triad/internal/d2/key"
)

func TestDefaultManifestCounts(t *testing.T) {
	m, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Counts(); got != DefaultCounts {
		t.Fatalf("counts %+v, want %+v", got, DefaultCounts)
	}
}

func TestManifestRoundTrip(t *testing.T) {
	m, err := ReadTree(".")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := m.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := Parse(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(m.Entries, back.Entries) {
		t.Fatalf("round trip changed the manifest:\n%v\n%v", m.Entries, back.Entries)
	}
	if !slices.ContainsFunc(m.Entries, func(e Entry) bool { return e.Path == "testdata/gosrc.manifest.gz" && e.Size > 0 }) {
		t.Fatalf("ReadTree missed testdata/gosrc.manifest.gz: %v", m.Entries)
	}
}

func TestParseRefuses(t *testing.T) {
	for _, text := range []string{
		"",
		"no header\n",
		header + "\nf 10 a/b\n", // file before its directory
		header + "\nf -1 a\n",   // negative size
		header + "\nd ../x\n",   // escapes the root
		header + "\nx a\n",      // unknown kind
		header + "\nd a//b\n",   // not clean
		header + "\nf 12\n",     // no path
	} {
		if _, err := Parse(bytes.NewReader([]byte(text))); err == nil {
			t.Errorf("Parse(%q) succeeded", text)
		}
	}
}

// TestKeysSortByPath: the keys of a fresh volume, in creation order (a
// depth-first walk with names sorted), increase strictly: D2's keys sort
// as the namespace does.
func TestKeysSortByPath(t *testing.T) {
	m, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	fs := NewFS(VolumeFor(1, 0), m)
	deep := 0
	for _, e := range m.Entries {
		if strings.Count(e.Path, "/") >= key.Levels {
			deep++
		}
	}
	if fs.Hashed() != deep || deep != 4 {
		t.Fatalf("%d entries placed by hash, %d paths past %d levels (Go 1.26.8's src has 4)", fs.Hashed(), deep, key.Levels)
	}
	prev := fs.Nodes[0]
	for i := 1; i < len(fs.Nodes); i++ {
		a, b := prev, fs.Nodes[i]
		if b.Key.Hashed() {
			continue
		}
		prev = b
		if bytes.Compare(a.Key[:], b.Key[:]) >= 0 {
			t.Fatalf("key of %q does not sort before that of %q", a.Path, b.Path)
		}
		lo, hi := key.Range(fs.Nodes[b.Parent].Key)
		if bytes.Compare(b.Key[:], lo[:]) < 0 || bytes.Compare(b.Key[:], hi[:]) > 0 {
			t.Fatalf("%q is outside its directory's range", b.Path)
		}
	}
}

func TestCreateDeleteReusesSlot(t *testing.T) {
	m := &Manifest{Entries: []Entry{{Path: "d", Dir: true}, {Path: "d/a", Size: 1}, {Path: "d/b", Size: 20000}}}
	fs := NewFS(VolumeFor(1, 0), m)
	d, b := fs.Lookup("d"), fs.Lookup("d/b")
	if fs.Blocks(b) != 3 || fs.BlockBytesOf(b, 2) != 20000-2*BlockBytes {
		t.Fatalf("d/b: %d blocks, last %d bytes", fs.Blocks(b), fs.BlockBytesOf(b, 2))
	}
	fs.Delete(fs.Lookup("d/a"))
	c := fs.Create(d, "c", false, 0)
	if fs.Nodes[c].Key.Slot(1) != 3 {
		t.Fatalf("c took slot %d; want 3, the next after the last given", fs.Nodes[c].Key.Slot(1))
	}
	e := fs.Create(d, "e", false, 0)
	if fs.Nodes[e].Key.Slot(1) != 4 || fs.Lookup("d/a") != -1 || len(fs.Children(d)) != 3 {
		t.Fatalf("after delete and creates: slot %d, lookup %d, %d children", fs.Nodes[e].Key.Slot(1), fs.Lookup("d/a"), len(fs.Children(d)))
	}
}

func testConfig() Config {
	cfg := DefaultConfig()
	cfg.Users, cfg.Duration = 4, 24*time.Hour
	return cfg
}

// TestTraceShape checks a day of four users: time order, think time over
// a second between groups and under a second within, tasks under MaxTask,
// every write and delete a real block, deletes only of blocks written.
func TestTraceShape(t *testing.T) {
	m, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	tr, err := NewTrace(m, cfg)
	if err != nil {
		t.Fatal(err)
	}
	type span struct{ from, to time.Duration }
	tasks := map[[2]int]*span{}
	last := make([]Access, cfg.Users)
	seen := make([]bool, cfg.Users)
	var prev time.Duration
	ops := map[Op]int{}
	for a, ok := tr.Next(); ok; a, ok = tr.Next() {
		if a.At < prev || a.At >= cfg.Duration {
			t.Fatalf("access at %v after one at %v (trace of %v)", a.At, prev, cfg.Duration)
		}
		prev = a.At
		ops[a.Op]++
		if seen[a.User] {
			l := last[a.User]
			gap := a.At - l.At
			switch {
			case a.Group == l.Group && gap >= MaxGap:
				t.Fatalf("user %d: %v between accesses of one group", a.User, gap)
			case a.Group != l.Group && gap <= time.Second:
				t.Fatalf("user %d: %v of think time between groups", a.User, gap)
			case a.Group < l.Group || a.Task < l.Task:
				t.Fatalf("user %d: task or group counted backwards", a.User)
			}
		}
		seen[a.User], last[a.User] = true, a
		s := tasks[[2]int{a.User, a.Task}]
		if s == nil {
			s = &span{from: a.At}
			tasks[[2]int{a.User, a.Task}] = s
		}
		s.to = a.At
		if a.Bytes < 0 || a.Bytes > BlockBytes || a.Key.Block() != a.Block {
			t.Fatalf("bad access %+v", a)
		}
	}
	for k, s := range tasks {
		if s.to-s.from > MaxTask {
			t.Fatalf("task %v spans %v", k, s.to-s.from)
		}
	}
	t.Logf("a day of %d users: %d tasks, %v reads, %v writes, %v deletes", cfg.Users, len(tasks), ops[Read], ops[Write], ops[Delete])
	if len(tasks) < 100 || ops[Write] == 0 || ops[Delete] == 0 || ops[Read] < ops[Write] {
		t.Fatalf("a day of %d users made %d tasks, ops %v", cfg.Users, len(tasks), ops)
	}
}

func TestTraceRepeats(t *testing.T) {
	m, err := Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg := testConfig()
	cfg.Duration = 6 * time.Hour
	run := func(seed uint64) (n int, sum uint64) {
		cfg.Seed = seed
		tr, err := NewTrace(m, cfg)
		if err != nil {
			t.Fatal(err)
		}
		for a, ok := tr.Next(); ok; a, ok = tr.Next() {
			n++
			sum = sum*31 + uint64(a.At) + uint64(a.Key[63]) + uint64(a.Op)
		}
		return n, sum
	}
	n1, s1 := run(1)
	n2, s2 := run(1)
	_, s3 := run(2)
	if n1 != n2 || s1 != s2 || s1 == s3 || n1 == 0 {
		t.Fatalf("seed 1 twice: %d/%x and %d/%x; seed 2 %x", n1, s1, n2, s2, s3)
	}
}
