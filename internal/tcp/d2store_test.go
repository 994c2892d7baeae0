package tcp

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/store"
)

// With Config.D2Store the driver keeps D2's blocks in a second engine of
// 64-byte keys under DataDir/d2, which outlives the driver; without it the
// host has none.
func TestD2StoreIsASecondEngine(t *testing.T) {
	dir := t.TempDir()
	d, err := Listen(Config{Listen: "127.0.0.1:0", DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if e := d.Storage().D2Engine(); e != nil {
		t.Fatalf("a driver without D2Store has D2's engine %T", e)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	sum := sha256.Sum256([]byte("k"))
	key, _ := id.FromBytes(append(sum[:], sum[:]...))
	data := []byte("a block of D2")
	open := func() *Driver {
		d, err := Listen(Config{Listen: "127.0.0.1:0", DataDir: dir, D2Store: &store.Options{}})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d = open()
	e := d.Storage().D2Engine()
	if err := e.Put(key, data, time.Now().Add(time.Hour), store.PutOptions{Opaque: true}); err != nil {
		t.Fatalf("put of a 64-byte key: %v", err)
	}
	if err := e.Put(id.Key(data), data, time.Now().Add(time.Hour), store.PutOptions{}); !errors.Is(err, store.ErrBadKey) {
		t.Fatalf("put of a 20-byte key in D2's store: %v, want ErrBadKey", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "d2")); err != nil {
		t.Fatalf("D2's store is not under the data folder: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = open()
	defer d.Close()
	got, _, err := d.Storage().D2Engine().Get(key)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("after a restart D2's store gives %q, %v; want %q", got, err, data)
	}
	if _, _, err := d.Storage().Engine().Get(key); err == nil {
		t.Fatal("the block is in the host's main engine too")
	}
}
