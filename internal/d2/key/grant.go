package key

import (
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
)

// A volume's writer holds an ed25519 key pair; the volume ID is derived
// from its public key (VolumeOfKey), so every key of the volume names
// the one public key whose signature may replace or delete it, and a
// node checks a destructive request against the key alone, with no
// registry to ask (RELIABILITY E3, after Usenet's Cancel-Lock: only the
// owner's signed deletes take effect).

// VolumeOfKey is the volume ID of the volume whose writer holds the
// private key of pub: SHA-256("triad-d2-volume-key\0" || pub), its first
// 20 bytes. The domain differs from VolumeOf's, so a named volume and a
// keyed one never share an ID.
func VolumeOfKey(pub ed25519.PublicKey) Volume {
	h := sha256.New()
	h.Write([]byte("triad-d2-volume-key\x00"))
	h.Write(pub)
	var v Volume
	copy(v[:], h.Sum(nil))
	return v
}

// Op is the destructive request a Grant allows.
type Op uint8

// The ops. Creating puts (keep, if absent) need no grant: they replace
// nothing.
const (
	OpDelete  Op = 1 // delete the key
	OpReplace Op = 2 // put whatever the key holds now
	OpIfHash  Op = 3 // put if the key's block has the SHA-256 Prev
)

// Grant is what a volume's writer signs to let the nodes replace or
// delete one key of the volume, until Expires. It names the bytes to be
// stored (Sum), so a grant captured on the way cannot store other bytes;
// it can be replayed, on the same key with the same bytes, until it
// expires.
type Grant struct {
	Op      Op
	Key     Key
	Sum     [32]byte // SHA-256 of the bytes put; zero for OpDelete
	Prev    [32]byte // the SHA-256 OpIfHash expects; zero otherwise
	Expires int64    // Unix nanoseconds after which no node takes it
}

// Errors of Verify.
var (
	// ErrNotVolumeKey: the public key is not the one the key's volume ID
	// is derived from (or not an ed25519 public key).
	ErrNotVolumeKey = errors.New("d2 key: not the volume's public key")
	// ErrBadSignature: the signature is not the volume key's over the
	// grant.
	ErrBadSignature = errors.New("d2 key: bad signature")
)

// grantDomain starts every signed grant: a signature made for anything
// else never verifies as one.
const grantDomain = "triad-d2-grant 1\x00"

// message is the bytes signed: the domain, then the fields in order,
// fixed widths.
func (g Grant) message() []byte {
	b := make([]byte, 0, len(grantDomain)+1+Size+32+32+8)
	b = append(b, grantDomain...)
	b = append(b, byte(g.Op))
	b = append(b, g.Key[:]...)
	b = append(b, g.Sum[:]...)
	b = append(b, g.Prev[:]...)
	return binary.BigEndian.AppendUint64(b, uint64(g.Expires))
}

// Sign is the signature of g by priv, the private key of g.Key's volume.
func (g Grant) Sign(priv ed25519.PrivateKey) []byte {
	return ed25519.Sign(priv, g.message())
}

// Verify checks that pub is g.Key's volume's public key and sig its
// signature of g. It does not look at Expires: the node compares it with
// its clock.
func (g Grant) Verify(pub, sig []byte) error {
	if len(pub) != ed25519.PublicKeySize || VolumeOfKey(pub) != g.Key.Volume() {
		return fmt.Errorf("%w of %v", ErrNotVolumeKey, g.Key.Volume())
	}
	if !ed25519.Verify(pub, g.message(), sig) {
		return ErrBadSignature
	}
	return nil
}
