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
// the one public key whose signature may write, replace or delete it,
// and a node checks a client's write against the key alone, with no
// registry to ask (RELIABILITY E3, after Usenet's Cancel-Lock: only the
// owner's signed deletes take effect). The one volume with no writer is
// the name registry's (Registry).

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

// Registry is the volume of the name registry (triad fs's records of
// volume names): VolumeOf's derivation of a fixed name, which no public
// key's VolumeOfKey gives (another domain), so the registry has no
// writer. The nodes take a client's put of a registry key unsigned, if
// absent only: a record, once put, is never replaced or deleted.
func Registry() Volume { return VolumeOf("triad fs volume names", nil) }

// RegistryKey is the key of name's record in the registry.
func RegistryKey(name string) Key { return Child(Root(Registry()), Overflow, name, 0) }

// Op is the write a Grant allows: one per put mode, and delete.
type Op uint8

// The ops.
const (
	OpDelete   Op = 1 // delete the key
	OpReplace  Op = 2 // put whatever the key holds now
	OpIfHash   Op = 3 // put if the key's block has the SHA-256 Prev
	OpKeep     Op = 4 // put unless the key holds other bytes
	OpIfAbsent Op = 5 // put if the key holds nothing
)

// Grant is what a volume's writer signs to let the nodes write, replace
// or delete one key of the volume, until Expires. It names the bytes to be
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
