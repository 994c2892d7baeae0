package fsadmin

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"triad/internal/d2/key"
	"triad/internal/d2fs"
)

// memStore is d2fs.MemBlocks with the keys d2client would sign with
// (MemBlocks checks no signature: the keys are only recorded).
type memStore struct {
	*d2fs.MemBlocks
	keys []key.Volume
	priv ed25519.PrivateKey // the last key given
}

func (m *memStore) AddKey(priv ed25519.PrivateKey) key.Volume {
	v := key.VolumeOfKey(priv.Public().(ed25519.PublicKey))
	m.keys, m.priv = append(m.keys, v), priv
	return v
}

// List implements Lister over the store's keys, in order.
func (m *memStore) List(ctx context.Context, prefix []byte, fn func(key.Key) error) error {
	for _, k := range m.Keys() {
		if bytes.HasPrefix(k[:], prefix) {
			if err := fn(k); err != nil {
				return err
			}
		}
	}
	return nil
}

func newStore() *memStore { return &memStore{MemBlocks: d2fs.NewMemBlocks()} }

// A name is taken once: mkvol writes the key file, the name resolves to
// the new volume for anyone, a second mkvol of it fails naming the
// volume and leaves no key file, and a volume ID resolves to itself.
func TestMkvolAndResolve(t *testing.T) {
	ctx := context.Background()
	b := newStore()
	dir := t.TempDir()
	keyFile := filepath.Join(dir, "sub", "home.key")
	vol, err := Mkvol(ctx, b, "home", keyFile, d2fs.DataBlockBytes)
	if err != nil {
		t.Fatal(err)
	}
	if len(b.keys) != 1 || b.keys[0] != vol {
		t.Fatalf("the store was given keys %v, want volume %v's", b.keys, vol)
	}
	if fi, err := os.Stat(keyFile); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v, %v", fi, err)
	}
	got, err := Resolve(ctx, b, "home")
	if err != nil || got != vol {
		t.Fatalf("Resolve(home) = %v, %v; want %v", got, err, vol)
	}
	if got, err := Resolve(ctx, b, vol.String()); err != nil || got != vol {
		t.Fatalf("Resolve(ID) = %v, %v; want %v", got, err, vol)
	}
	if _, err := Resolve(ctx, b, "nope"); err == nil || !strings.Contains(err.Error(), "triad fs mkvol nope") {
		t.Fatalf("Resolve of an unknown name: %v", err)
	}
	other := filepath.Join(dir, "other.key")
	if _, err := Mkvol(ctx, b, "home", other, d2fs.DataBlockBytes); err == nil || !strings.Contains(err.Error(), "is taken (volume "+vol.String()) || strings.Contains(err.Error(), "%!") {
		t.Fatalf("second mkvol of a name: %v", err)
	}
	if _, err := os.Stat(other); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused mkvol left its key file: %v", err)
	}
	// The writer's key loads for its own volume only.
	b2 := newStore()
	if _, err := LoadKey(b2, keyFile, "home", vol); err != nil || len(b2.keys) != 1 {
		t.Fatalf("LoadKey: %v (keys %v)", err, b2.keys)
	}
	if _, err := LoadKey(b2, keyFile, "home", key.Volume{1}); err == nil || !strings.Contains(err.Error(), "is volume") {
		t.Fatalf("LoadKey for another volume: %v", err)
	}
	if _, err := LoadKey(b2, filepath.Join(dir, "none.key"), "x", vol); err == nil || !strings.Contains(err.Error(), "holds no key for volume x") {
		t.Fatalf("LoadKey without a file: %v", err)
	}
}

// A key file is never overwritten, and what is not a PEM ed25519 key is
// refused by name.
func TestKeyFiles(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "k.key")
	_, priv, _ := ed25519.GenerateKey(nil)
	if err := WriteKeyFile(p, priv); err != nil {
		t.Fatal(err)
	}
	if err := WriteKeyFile(p, priv); err == nil || !strings.Contains(err.Error(), "not overwriting") {
		t.Fatalf("second write: %v", err)
	}
	got, err := ReadKeyFile(p)
	if err != nil || !bytes.Equal(got, priv) {
		t.Fatalf("read back: %v", err)
	}
	bad := filepath.Join(dir, "bad.key")
	os.WriteFile(bad, []byte("hello"), 0o600)
	if _, err := ReadKeyFile(bad); err == nil || !strings.Contains(err.Error(), "not a PEM private key") {
		t.Fatalf("garbage key file: %v", err)
	}
	if p, err := KeyPath("", "home"); err != nil || !strings.HasSuffix(p, filepath.Join("triad", "volumes", "home.key")) {
		t.Fatalf("default key path %q, %v", p, err)
	}
}

// Records mkvol wrote before names were signed still resolve, and one
// whose public key is not its volume's is refused.
func TestLegacyRegistryRecord(t *testing.T) {
	pub, _, _ := ed25519.GenerateKey(nil)
	v := key.VolumeOfKey(pub)
	rec := legacyRegistryMagic + "old\n" + v.String() + "\n" + hex.EncodeToString(pub) + "\n"
	if got, err := decodeName([]byte(rec), "old"); err != nil || got != v {
		t.Fatalf("legacy record: %v, %v", got, err)
	}
	other, _, _ := ed25519.GenerateKey(nil)
	forged := legacyRegistryMagic + "old\n" + v.String() + "\n" + hex.EncodeToString(other) + "\n"
	if _, err := decodeName([]byte(forged), "old"); err == nil {
		t.Fatal("a legacy record naming another volume's public key was accepted")
	}
	if _, err := decodeName([]byte(rec), "new"); err == nil {
		t.Fatal("a record of another name was accepted")
	}
}

func TestParsePath(t *testing.T) {
	p, err := ParsePath("home:/a/b/../c/")
	if err != nil || p != (Path{"home", "/a/c"}) {
		t.Fatalf("ParsePath = %+v, %v", p, err)
	}
	dir, name, err := p.Parent()
	if err != nil || dir.String() != "home:/a" || name != "c" {
		t.Fatalf("Parent = %v %q %v", dir, name, err)
	}
	if _, _, err := (Path{"home", "/"}).Parent(); err == nil {
		t.Fatal("the root has a parent")
	}
	for _, bad := range []string{"home", ":/a", "home:a"} {
		if _, err := ParsePath(bad); err == nil {
			t.Errorf("ParsePath(%q) accepted", bad)
		}
	}
}

// A file written through WriteFile (replacing a longer one) reads back
// whole through CopyOut after a commit and a fresh open. Blocks no commit
// points at are found as orphans, and deleted but for those of the
// commit before the newest.
func TestFilesAndOrphans(t *testing.T) {
	ctx := context.Background()
	b := newStore()
	vol, err := Mkvol(ctx, b, "v", filepath.Join(t.TempDir(), "v.key"), d2fs.DataBlockBytes)
	if err != nil {
		t.Fatal(err)
	}
	cfg := d2fs.DefaultConfig()
	cfg.Writer = b.priv
	f, err := d2fs.Open(ctx, b, vol, false, cfg)
	if err != nil {
		t.Fatal(err)
	}
	root, _ := f.Walk(ctx, "/")
	long := bytes.Repeat([]byte("0123456789"), 5000)
	short := []byte("short")
	for _, data := range [][]byte{long, short} {
		if err := WriteFile(ctx, f, root, "f", bytes.NewReader(data)); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(ctx); err != nil {
		t.Fatal(err)
	}
	g, err := d2fs.Open(ctx, b, vol, true, d2fs.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	n, err := g.Walk(ctx, "/f")
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := CopyOut(ctx, g, n, &out); err != nil || !bytes.Equal(out.Bytes(), short) {
		t.Fatalf("CopyOut = %q, %v", out.Bytes(), err)
	}
	r, reachable, err := g.Reachable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := Orphans(ctx, b, vol, r.Gen, reachable, false); err != nil || rep.Found != 0 {
		t.Fatalf("Orphans of a clean volume = %+v, %v", rep, err)
	}
	stray, previous := n.Key().WithBlock(100, r.Gen), n.Key().WithBlock(101, r.Gen-1)
	for _, k := range []key.Key{stray, previous} {
		if err := b.Put(ctx, k, []byte("orphan")); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := Orphans(ctx, b, vol, r.Gen, reachable, false)
	if err != nil || rep.Found != 2 || rep.Deleted+rep.Kept != 0 {
		t.Fatalf("Orphans (count) = %+v, %v", rep, err)
	}
	rep, err = Orphans(ctx, b, vol, r.Gen, reachable, true)
	if err != nil || rep.Found != 2 || rep.Deleted != 1 || rep.Kept != 1 || rep.Err() != nil {
		t.Fatalf("Orphans (delete) = %+v, %v", rep, err)
	}
	if _, _, err := b.Latest(ctx, stray, stray); !errors.Is(err, d2fs.ErrNotFound) {
		t.Fatalf("the stray block is still there: %v", err)
	}
	if _, _, err := b.Latest(ctx, previous, previous); err != nil {
		t.Fatalf("the previous commit's block was deleted: %v", err)
	}
}
