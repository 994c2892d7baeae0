package key

import (
	"crypto/ed25519"
	"crypto/sha256"
	"errors"
	"testing"
)

func testKeyPair(t testing.TB, seed byte) (ed25519.PublicKey, ed25519.PrivateKey) {
	t.Helper()
	s := make([]byte, ed25519.SeedSize)
	s[0] = seed
	priv := ed25519.NewKeyFromSeed(s)
	return priv.Public().(ed25519.PublicKey), priv
}

// TestVolumeOfKey: the ID is SHA-256 of the domain and the public key,
// its first 20 bytes; two keys give two volumes; a named volume's
// derivation never gives the same ID.
func TestVolumeOfKey(t *testing.T) {
	pub, _ := testKeyPair(t, 1)
	sum := sha256.Sum256(append([]byte("triad-d2-volume-key\x00"), pub...))
	if v := VolumeOfKey(pub); string(v[:]) != string(sum[:VolumeBytes]) {
		t.Fatalf("VolumeOfKey = %v, want %x", v, sum[:VolumeBytes])
	}
	other, _ := testKeyPair(t, 2)
	if VolumeOfKey(pub) == VolumeOfKey(other) {
		t.Fatal("two public keys, one volume")
	}
	if VolumeOfKey(pub) == VolumeOf("", pub) {
		t.Fatal("a keyed volume's ID is a named volume's")
	}
}

// TestGrant: a grant signed by the volume's key verifies; one changed in
// any field, signed by another key, or shown with another volume's
// public key does not.
func TestGrant(t *testing.T) {
	pub, priv := testKeyPair(t, 1)
	otherPub, otherPriv := testKeyPair(t, 2)
	g := Grant{Op: OpReplace, Key: Root(VolumeOfKey(pub)).WithBlock(3, 7), Sum: sha256.Sum256([]byte("new")), Expires: 1e18}
	sig := g.Sign(priv)
	if err := g.Verify(pub, sig); err != nil {
		t.Fatalf("the writer's grant: %v", err)
	}
	changed := map[string]func(Grant) Grant{
		"op":      func(g Grant) Grant { g.Op = OpDelete; return g },
		"key":     func(g Grant) Grant { g.Key = g.Key.WithBlock(4, 7); return g },
		"bytes":   func(g Grant) Grant { g.Sum[0] ^= 1; return g },
		"prev":    func(g Grant) Grant { g.Prev[31] = 1; return g },
		"expires": func(g Grant) Grant { g.Expires++; return g },
	}
	for name, change := range changed {
		if err := change(g).Verify(pub, sig); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s changed: %v, want ErrBadSignature", name, err)
		}
	}
	if err := g.Verify(pub, g.Sign(otherPriv)); !errors.Is(err, ErrBadSignature) {
		t.Errorf("signed by another key: %v, want ErrBadSignature", err)
	}
	if err := g.Verify(otherPub, g.Sign(otherPriv)); !errors.Is(err, ErrNotVolumeKey) {
		t.Errorf("another volume's key: %v, want ErrNotVolumeKey", err)
	}
	if err := g.Verify(pub[:16], sig); !errors.Is(err, ErrNotVolumeKey) {
		t.Errorf("a short public key: %v, want ErrNotVolumeKey", err)
	}
}

// TestRegistry: a registry key is in the registry's volume and depends on
// the name; the registry is not a keyed volume's ID for a few keys (its
// derivation's domain differs from VolumeOfKey's).
func TestRegistry(t *testing.T) {
	a, b := RegistryKey("home"), RegistryKey("work")
	if a.Volume() != Registry() || b.Volume() != Registry() || a == b {
		t.Fatalf("RegistryKey: %v, %v in %v", a, b, Registry())
	}
	if a != RegistryKey("home") {
		t.Fatal("RegistryKey is not a function of the name")
	}
	for seed := range byte(8) {
		if pub, _ := testKeyPair(t, seed); VolumeOfKey(pub) == Registry() {
			t.Fatalf("key %d derives the registry", seed)
		}
	}
}
