package usenet

import (
	"bytes"
	"crypto/sha256"
	"encoding"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"hash"
	"time"

	"triad/internal/id"
)

// Announcements that cannot lie (issue 27). An article stored in the ring
// is one block, and a block's key is the SHA-256 of its bytes, so a site
// that is sent only an article's headers could check them against the key
// only by fetching the whole block. The block is therefore laid out body
// first:
//
//	body | head (header lines and the empty line) | len(head), 4 bytes | "ART1"
//
// The announcing site sends the head and SHA-256's state after the body
// (its midstate, 108 bytes), and the receiving site finishes the hash over
// the head and the trailer itself: the key it gets commits to the very
// headers it was sent. Forged headers, or a message-id not the head's,
// over another article's block would need a second preimage of SHA-256.
// The posting site hashes the body once more to get the midstate.

// sealMagic ends a sealed block. An article in wire form ends in LF, so a
// block without it is an article stored before sealing, read as it is.
const sealMagic = "ART1"

// sealTrailer is the bytes a sealed block has beyond its article.
const sealTrailer = 4 + len(sealMagic)

// sealTrailerOf is the trailer of a head of n bytes.
func sealTrailerOf(n int) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(n)), sealMagic...)
}

// seal lays out an article, its head (header lines and the empty line)
// and its body, as a block.
func seal(head, body []byte) []byte {
	out := make([]byte, 0, len(head)+len(body)+sealTrailer)
	out = append(out, body...)
	out = append(out, head...)
	return append(out, sealTrailerOf(len(head))...)
}

// unseal splits a sealed block into its head and body; ok is false for a
// block that is not sealed (an article as it is).
func unseal(block []byte) (head, body []byte, ok bool) {
	n := len(block) - sealTrailer
	if n < 0 || string(block[n+4:]) != sealMagic {
		return nil, nil, false
	}
	h := int(binary.BigEndian.Uint32(block[n:]))
	if h > n {
		return nil, nil, false
	}
	return block[n-h : n], block[:n-h], true
}

// unsealed is a block as the article it holds, in wire form: a sealed
// block's head and body put back in order in a new buffer, any other
// block as it is.
func unsealed(block []byte) []byte {
	head, body, ok := unseal(block)
	if !ok {
		return block
	}
	return append(append(make([]byte, 0, len(head)+len(body)), head...), body...)
}

// midstate is SHA-256's state after body, as an announcement carries it.
func midstate(body []byte) string {
	_, st := sealKey(nil, body, true)
	return st
}

// encodeState is h's state as an announcement carries it.
func encodeState(h hash.Hash) string {
	st, err := h.(encoding.BinaryMarshaler).MarshalBinary()
	if err != nil {
		panic(err) // crypto/sha256's digest always marshals
	}
	return base64.RawURLEncoding.EncodeToString(st)
}

// sealKey is the key of the block seal(head, body) lays out, hashed in
// one pass, and, if asked (a relaying site announces it), SHA-256's
// state after the body as midstate gives it.
func sealKey(head, body []byte, withState bool) (key id.ID, state string) {
	h := sha256.New()
	h.Write(body)
	if withState {
		state = encodeState(h)
	}
	h.Write(head)
	h.Write(sealTrailerOf(len(head)))
	var sum [sha256.Size]byte
	key, _ = id.FromBytes(h.Sum(sum[:0])[:id.Bytes])
	return key, state
}

// maxMidstate bounds an announced midstate's encoded length (108 bytes
// marshalled).
const maxMidstate = 256

// sealedKey finishes the hash that state began over a body, with head
// (the header lines and the empty line) and the trailer: the key of the
// sealed block. It returns the body's length too, which the state holds.
func sealedKey(state string, head []byte) (id.ID, int, error) {
	if len(state) > maxMidstate {
		return id.ID{}, 0, fmt.Errorf("%w: midstate too long", ErrNoChordID)
	}
	st, err := base64.RawURLEncoding.DecodeString(state)
	if err != nil || len(st) < 8 {
		return id.ID{}, 0, fmt.Errorf("%w: bad midstate", ErrNoChordID)
	}
	h := sha256.New()
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(st); err != nil {
		return id.ID{}, 0, fmt.Errorf("%w: bad midstate: %v", ErrNoChordID, err)
	}
	bodyLen := binary.BigEndian.Uint64(st[len(st)-8:])
	if bodyLen > 1<<31 {
		return id.ID{}, 0, fmt.Errorf("%w: bad midstate", ErrNoChordID)
	}
	h.Write(head)
	h.Write(sealTrailerOf(len(head)))
	sum := h.Sum(nil)
	key, _ := id.FromBytes(sum[:id.Bytes])
	return key, int(bodyLen), nil
}

// sealedHead is an article's head as sealing stores it: the header lines
// and the empty line, none of them an X-ChordID (the announcement adds the
// one true value).
func sealedHead(a *Article) []byte {
	head := a.Raw[:a.body]
	if !bytes.HasSuffix(head, []byte("\r\n\r\n")) {
		head = append(bytes.Clone(head), "\r\n"...) // an article that ends after its headers
	}
	if _, n := a.Header(ChordHeader); n > 0 {
		head = withoutHeader(head, ChordHeader)
	}
	return head
}

// SealedAnnouncement lays a parsed article out as a sealed block, as a
// site that shares the ring stores it, and returns the block with the
// record a site announces it by, expiring at expires: AppendAnnouncement
// of the record is its TAKEDHT. Tests of the announcement checks forge
// their announcements from it.
func SealedAnnouncement(a *Article, expires time.Time) ([]byte, LogRecord) {
	head, body := sealedHead(a), a.Raw[a.body:]
	block := seal(head, body)
	msgid, _ := a.Header("Message-ID")
	return block, LogRecord{Key: id.Key(block), Expires: expires, Bytes: uint32(len(head) + len(body)),
		Lines: uint32(a.Lines()), MessageID: msgid, Head: head[:len(head)-2], State: midstate(body)}
}
