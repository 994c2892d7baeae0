package fsadmin

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"

	"triad/internal/d2/key"
	"triad/internal/d2fs"
)

// Store is what administration needs of the block store: D2-FS's blocks,
// and a place to hold a volume's private key, with which the store signs
// the volume's puts and deletes (d2client.Blocks.AddKey).
type Store interface {
	d2fs.Blocks
	AddKey(priv ed25519.PrivateKey) key.Volume
}

// The volume registry: a name's record sits under a key derived from the
// name in a volume of its own (key.RegistryKey), which has no writer:
// the nodes take its records unsigned, put only if absent, and never
// replace or delete them, so a name maps to one volume ID for every
// machine, for good. A record is key.SignName's: the name, the volume ID,
// the writer's public key and its signature, which the nodes verify
// before they store it.

// legacyRegistryMagic starts the records mkvol wrote before they were
// signed; they are still read.
const legacyRegistryMagic = "triad-fs-volume 2\n"

// decodeName reads the registry's record of name.
func decodeName(b []byte, name string) (key.Volume, error) {
	if bytes.HasPrefix(b, []byte(legacyRegistryMagic)) {
		return decodeLegacyName(b, name)
	}
	rec, err := key.ParseName(b)
	switch {
	case err != nil:
		return key.Volume{}, fmt.Errorf("the registry's record of %q: %w", name, err)
	case rec.Name != name:
		return key.Volume{}, fmt.Errorf("the registry's record of %q names %q", name, rec.Name)
	}
	return rec.Volume, nil
}

func decodeLegacyName(b []byte, name string) (key.Volume, error) {
	lines := bytes.Split(b[len(legacyRegistryMagic):], []byte("\n"))
	if len(lines) != 4 || string(lines[0]) != name {
		return key.Volume{}, fmt.Errorf("the registry's record of %q is malformed", name)
	}
	v, err := ParseVolumeID(string(lines[1]))
	if err != nil {
		return key.Volume{}, err
	}
	if pub, err := hex.DecodeString(string(lines[2])); err != nil || len(pub) != ed25519.PublicKeySize || key.VolumeOfKey(pub) != v {
		return key.Volume{}, fmt.Errorf("the registry's record of %q names a public key that is not volume %s's", name, v)
	}
	return v, nil
}

// ParseVolumeID reads a volume ID: 40 hex digits.
func ParseVolumeID(s string) (key.Volume, error) {
	var v key.Volume
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != key.VolumeBytes {
		return v, fmt.Errorf("%q is not a volume ID (%d hex digits)", s, 2*key.VolumeBytes)
	}
	copy(v[:], b)
	return v, nil
}

// Resolve reads VOLUME as a user wrote it: a volume ID, or a name from
// the registry.
func Resolve(ctx context.Context, b d2fs.Blocks, arg string) (key.Volume, error) {
	if len(arg) == 2*key.VolumeBytes {
		if v, err := ParseVolumeID(arg); err == nil {
			return v, nil
		}
	}
	k := key.RegistryKey(arg)
	_, data, err := b.Latest(ctx, k, k)
	if errors.Is(err, d2fs.ErrNotFound) {
		return key.Volume{}, fmt.Errorf("no volume named %q (make one with 'triad fs mkvol %s')", arg, arg)
	}
	if err != nil {
		return key.Volume{}, err
	}
	return decodeName(data, arg)
}

// Mkvol makes a volume named name with a fresh key pair, writing the
// private key to keyFile (WriteKeyFile), then claims the name. Its files
// are cut in data blocks of dataBytes (d2fs.MkvolSized). A name taken in
// between leaves the new volume's one superblock, which Mkvol deletes,
// and the key file, which it removes.
func Mkvol(ctx context.Context, b Store, name, keyFile string, dataBytes int) (key.Volume, error) {
	k := key.RegistryKey(name)
	if _, data, err := b.Latest(ctx, k, k); err == nil {
		v, derr := decodeName(data, name)
		if derr != nil {
			return key.Volume{}, fmt.Errorf("volume name %q is taken, by a record that does not read: %w", name, derr)
		}
		return key.Volume{}, fmt.Errorf("volume name %q is taken (volume %s)", name, v)
	} else if !errors.Is(err, d2fs.ErrNotFound) {
		return key.Volume{}, err
	}
	_, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		return key.Volume{}, err
	}
	if err := WriteKeyFile(keyFile, priv); err != nil {
		return key.Volume{}, err
	}
	b.AddKey(priv)
	vol, err := d2fs.MkvolSized(ctx, b, priv, time.Now(), dataBytes)
	if err != nil {
		return key.Volume{}, errors.Join(err, os.Remove(keyFile))
	}
	rec, err := key.SignName(name, priv)
	if err != nil {
		return key.Volume{}, errors.Join(err, os.Remove(keyFile))
	}
	if err := b.PutIf(ctx, k, [32]byte{}, rec); err != nil {
		// The first superblock (d2fs's layout: root key, block 0, version 1).
		derr := b.Delete(ctx, key.Root(vol).WithBlock(0, 1))
		if errors.Is(err, d2fs.ErrConflict) {
			err = fmt.Errorf("volume name %q was taken meanwhile", name)
		}
		return key.Volume{}, errors.Join(err, derr, os.Remove(keyFile))
	}
	return vol, nil
}
