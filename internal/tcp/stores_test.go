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

// With Config.Stores the driver keeps a protocol's records in an engine
// of its own, under DataDir/NAME, with the protocol's key width, which
// outlives the driver; a store it was not configured with, or asked for
// with another key width, is an error, as is a name that would leave the
// data folder.
func TestStoresAreEnginesOfTheirOwn(t *testing.T) {
	dir := t.TempDir()
	d, err := Listen(Config{Listen: "127.0.0.1:0", DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if e, err := d.Storage().Store("blocks", 64); err == nil {
		t.Fatalf("a driver without Stores has a store %T", e)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "store", "../x", "a/b", "Blocks"} {
		if d, err := Listen(Config{Listen: "127.0.0.1:0", DataDir: dir, Stores: map[string]store.Options{bad: {KeyWidth: 64}}}); err == nil {
			d.Close()
			t.Errorf("store name %q accepted", bad)
		}
	}

	sum := sha256.Sum256([]byte("k"))
	key, _ := id.FromBytes(append(sum[:], sum[:]...))
	data := []byte("a block of 64-byte keys")
	open := func() *Driver {
		d, err := Listen(Config{Listen: "127.0.0.1:0", DataDir: dir, Stores: map[string]store.Options{"blocks": {KeyWidth: 64}}})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d = open()
	if _, err := d.Storage().Store("blocks", 20); err == nil {
		t.Fatal("the store was given out with another key width")
	}
	e, err := d.Storage().Store("blocks", 64)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Put(key, data, time.Now().Add(time.Hour), store.PutOptions{Opaque: true}); err != nil {
		t.Fatalf("put of a 64-byte key: %v", err)
	}
	if err := e.Put(id.Key(data), data, time.Now().Add(time.Hour), store.PutOptions{}); !errors.Is(err, store.ErrBadKey) {
		t.Fatalf("put of a 20-byte key in a store of 64-byte keys: %v, want ErrBadKey", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "blocks")); err != nil {
		t.Fatalf("the store is not under the data folder: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	d = open()
	defer d.Close()
	e, _ = d.Storage().Store("blocks", 64)
	got, _, err := e.Get(key)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("after a restart the store gives %q, %v; want %q", got, err, data)
	}
	if _, _, err := d.Storage().Engine().Get(key); err == nil {
		t.Fatal("the block is in the host's main engine too")
	}
}
