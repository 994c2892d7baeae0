package key

import (
	"bytes"
	"crypto/ed25519"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// A name record is the registry's entry for one volume name: the name,
// the volume ID and the writer's public key it is derived from, and the
// writer's signature of the name and the volume. A node takes a registry
// put only if its bytes are a record that verifies and its key is
// RegistryKey of the record's name, so the registry holds nothing but
// small, signed name claims: a client cannot fill it with other bytes,
// nor claim a name for a volume whose private key it does not hold.

// MaxNameBytes bounds a volume name, as a file name is bounded.
const MaxNameBytes = 255

// nameMagic starts a record; nameDomain starts the signed message, so a
// signature made for anything else never verifies as a name claim.
const (
	nameMagic  = "triad-fs-volume 3\n"
	nameDomain = "triad-d2-name 1\x00"
)

// ErrBadName is a malformed or unverified name record.
var ErrBadName = errors.New("d2 key: bad name record")

// NameRecord is a parsed registry record.
type NameRecord struct {
	Name   string
	Volume Volume
	Pub    ed25519.PublicKey
}

// CheckName reports whether name can be a volume name: 1 to MaxNameBytes
// bytes, without ':', '/' or a newline.
func CheckName(name string) error {
	if name == "" || len(name) > MaxNameBytes || strings.ContainsAny(name, ":/\n") {
		return fmt.Errorf("%w: a volume name is 1 to %d bytes, without ':', '/' or a newline", ErrBadName, MaxNameBytes)
	}
	return nil
}

func nameMessage(name string, v Volume) []byte {
	return append(append([]byte(nameDomain), v[:]...), name...)
}

// SignName is the record claiming name for the volume whose writer holds
// priv.
func SignName(name string, priv ed25519.PrivateKey) ([]byte, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	pub := priv.Public().(ed25519.PublicKey)
	v := VolumeOfKey(pub)
	sig := ed25519.Sign(priv, nameMessage(name, v))
	return []byte(nameMagic + name + "\n" + v.String() + "\n" + hex.EncodeToString(pub) + "\n" + hex.EncodeToString(sig) + "\n"), nil
}

// maxNameRecord bounds a record's bytes: the magic, the name and the hex
// fields with their newlines.
const maxNameRecord = len(nameMagic) + MaxNameBytes + 2*VolumeBytes + 2*ed25519.PublicKeySize + 2*ed25519.SignatureSize + 4

// ParseName parses and verifies a record: its form, that the volume ID is
// derived from the public key, and the signature.
func ParseName(b []byte) (NameRecord, error) {
	rest, ok := bytes.CutPrefix(b, []byte(nameMagic))
	if !ok || len(b) > maxNameRecord {
		return NameRecord{}, fmt.Errorf("%w: not a name record", ErrBadName)
	}
	f := strings.Split(string(rest), "\n")
	if len(f) != 5 || f[4] != "" {
		return NameRecord{}, fmt.Errorf("%w: want 4 lines", ErrBadName)
	}
	if err := CheckName(f[0]); err != nil {
		return NameRecord{}, err
	}
	vol, err1 := hex.DecodeString(f[1])
	pub, err2 := hex.DecodeString(f[2])
	sig, err3 := hex.DecodeString(f[3])
	switch {
	case err1 != nil || err2 != nil || err3 != nil:
		return NameRecord{}, fmt.Errorf("%w: a field is not hex", ErrBadName)
	case len(vol) != VolumeBytes || len(pub) != ed25519.PublicKeySize || len(sig) != ed25519.SignatureSize:
		return NameRecord{}, fmt.Errorf("%w: a field has the wrong length", ErrBadName)
	}
	r := NameRecord{Name: f[0], Pub: pub}
	copy(r.Volume[:], vol)
	if VolumeOfKey(r.Pub) != r.Volume {
		return NameRecord{}, fmt.Errorf("%w: volume %v is not derived from its public key", ErrBadName, r.Volume)
	}
	if !ed25519.Verify(r.Pub, nameMessage(r.Name, r.Volume), sig) {
		return NameRecord{}, fmt.Errorf("%w: %w", ErrBadName, ErrBadSignature)
	}
	return r, nil
}
