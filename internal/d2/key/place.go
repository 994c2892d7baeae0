package key

import "crypto/sha512"

// Block placement, the traditional DHT's (§8-9's baseline): a block's
// ring position is a hash of its key, so the blocks of one file, one
// directory or one task land on unrelated nodes. PlaceBlock keeps the
// version (the last 4 bytes), so the versions of one block stay one
// contiguous range and Latest over them works as on D2's own keys; the
// rest is SHA-512 of the key without its version. D2-FS runs on it
// unchanged (d2client's Config.Placement); the writer signs the key
// itself, and the request carries it (wire.D2Auth.Signed) for the node
// to check that the position is its placement.

// PlaceBlock is k's position under block placement.
func PlaceBlock(k Key) Key {
	h := sha512.New()
	h.Write([]byte("triad-d2-place-block\x00"))
	h.Write(k[:offVersion])
	var p Key
	copy(p[:offVersion], h.Sum(nil))
	copy(p[offVersion:], k[offVersion:])
	return p
}
