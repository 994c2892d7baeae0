package bench

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"math/rand/v2"
	"testing"
	"time"

	"triad/internal/d2fs"
)

// The chaos loop's writer, on an in-memory store: what it records as
// durable after it stops is exactly what a fresh read-only mount reads,
// and it renamed and committed along the way. (Under -race in CI: the
// writer and the mount's ticker share the FS.)
func TestD2WriterRecordsWhatIsDurable(t *testing.T) {
	ctx := context.Background()
	b := d2fs.NewMemBlocks()
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	vol, err := d2fs.Mkvol(ctx, b, priv, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cfg := d2fs.DefaultConfig()
	cfg.Writer = priv
	f, err := d2fs.Open(ctx, b, vol, false, cfg)
	if err != nil {
		t.Fatal(err)
	}
	w := &d2Writer{f: f, r: rand.New(rand.NewPCG(1, 2)), model: map[string][32]byte{}, stop: make(chan struct{}), log: t.Logf}
	w.start()
	for w.fsyncs() < 20 {
		time.Sleep(50 * time.Millisecond)
	}
	if !w.finish(10 * time.Second) {
		t.Fatal("the writer's last commit did not land")
	}
	acked, _, renames := w.counts()
	want := w.snapshot()
	if acked < 20 || renames == 0 || len(want) < 20 {
		t.Fatalf("%d fsyncs, %d renames, %d files recorded", acked, renames, len(want))
	}
	r, err := d2fs.Open(ctx, b, vol, true, d2fs.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	ents, err := r.ReadDir(ctx, r.Root())
	if err != nil || len(ents) != len(want) {
		t.Fatalf("the volume lists %d files (%v), the writer recorded %d", len(ents), err, len(want))
	}
	for name, sum := range want {
		got, err := readAll(ctx, r, name)
		if err != nil || sha256.Sum256(got) != sum {
			t.Errorf("%s: %v, or not the bytes recorded", name, err)
		}
	}
}
