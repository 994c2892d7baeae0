package d2

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	d2key "triad/internal/d2/key"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/wire"
)

// A block keeps the writer's consent it was put with (issue 44). The
// owner checks a client's signature when it decides a put (auth.go); the
// consent, a wire.D2Proof, is then stored with the block's bytes in every
// holder's engine and travels with every copy made of the block: the
// owner's replicas, sync's pushes and pulls, a pointer's fetch, a get's
// repair. A node takes a copy from another node only if the proof
// verifies over the copy's key and bytes (Config.CheckPeers), so a node
// can move a volume's blocks without being able to forge one, and an
// insider who pushes bytes of its own to a replica is refused.
//
// A proof's signature outlives its expiry here: a copy is made long after
// the put (a replica that was down, a node that joined). What the expiry
// still bounds is the copy's version: the owner stamped it while the
// grant was good, so a version past the grant's expiry plus Retention
// and the skews is a forgery (copyVersionCap). A replace of a held copy
// is further refused when the incoming proof is older than the held
// one's (its grant expired more than GrantSkew earlier) or is the held
// copy's own predecessor (the held proof's D2PutIfHash expected the
// incoming bytes), unless the incoming proof expected the held bytes
// (the writer's next version, whatever the clocks say): a captured grant
// replayed to roll a superblock or a lease back is refused, except for a
// grant made within GrantSkew of the held one and not its direct
// predecessor, which stays the residual window (docs/d2.md).
//
// A block put through the node-local API (Node.Put, the simulator's
// workloads) has no proof; with CheckPeers its copies are refused, so
// CheckPeers is for deployments whose writes come from clients.

// storedMagic starts a block's engine record: the proof's length and the
// proof, then the bytes. A record without it is a block stored before
// proofs were kept: its bytes as they are, with no proof.
var storedMagic = [4]byte{0xd2, 'p', 'f', 1}

// encodeStored is the engine record of a block with proof p.
func encodeStored(p wire.D2Proof, data []byte) []byte {
	var head [binary.MaxVarintLen64]byte
	proof := wire.AppendD2Proof(nil, p)
	b := make([]byte, 0, len(storedMagic)+len(head)+len(proof)+len(data))
	b = append(b, storedMagic[:]...)
	b = binary.AppendUvarint(b, uint64(len(proof)))
	b = append(b, proof...)
	return append(b, data...)
}

// RecordOverhead is the most a block's engine record adds to its bytes
// (the magic, the proof's length and the proof: about 220 bytes), which a
// node's D2 engine allows above Config.BlockBytes.
const RecordOverhead = 256

// maxStoredProof bounds a stored proof's length.
const maxStoredProof = RecordOverhead - len(storedMagic) - 2

// decodeStored splits an engine record into the proof and the block's
// bytes (which alias rec).
func decodeStored(rec []byte) (wire.D2Proof, []byte) {
	if !bytes.HasPrefix(rec, storedMagic[:]) {
		return wire.D2Proof{}, rec
	}
	rest := rec[len(storedMagic):]
	n, w := binary.Uvarint(rest)
	if w <= 0 || n > uint64(maxStoredProof) || n > uint64(len(rest)-w) {
		return wire.D2Proof{}, rec
	}
	p, err := wire.ParseD2Proof(rest[w : w+int(n)])
	if err != nil {
		return wire.D2Proof{}, rec
	}
	return p, rest[w+int(n):]
}

// proofOf is the proof of a put the owner decides: its consent to the
// bytes put.
func (p putReq) proof() wire.D2Proof {
	pr := wire.D2Proof{Mode: p.mode, Auth: p.auth}
	if p.mode == wire.D2PutIfHash {
		pr.Prev = p.prev
	}
	return pr
}

// copyMsg is the message that gives a holder a copy of a block.
func copyMsg(k id.ID, c blockCopy, replace bool) *wire.D2Store {
	return &wire.D2Store{Key: k, Data: c.data, Replace: replace, Version: c.version, Mode: c.proof.Mode, Prev: c.proof.Prev, Auth: c.proof.Auth}
}

// copyOf is the copy a D2Store that is not an owner's decision carries.
func copyOf(m *wire.D2Store) blockCopy {
	return blockCopy{data: m.Data, version: m.Version, proof: wire.D2Proof{Mode: m.Mode, Prev: m.Prev, Auth: m.Auth}}
}

// checkCopy checks a copy of block k another node gives this one (its
// store, or its answer to a fetch): a registry record must verify and
// never replaces other bytes (first claim wins); any other block needs
// its writer's proof over its bytes, and a version the proof allows.
// replace reports whether the copy may replace what is held.
func (n *Node) checkCopy(env node.Env, k id.ID, c blockCopy, replace bool) (bool, error) {
	var err error
	switch {
	case isRegistryKey(k):
		err = authorize(d2key.OpIfAbsent, k, c.data, nil, wire.D2Auth{}, env.Now())
		replace = false
	case n.cfg.CheckPeers:
		err = n.verifyCopy(k, c, replace)
	}
	if err != nil {
		n.Stats.Unauthorized++
		return false, err
	}
	return replace, nil
}

// verifyCopy checks the writer's proof of a copy of block k (not a
// registry record's).
func (n *Node) verifyCopy(k id.ID, c blockCopy, replace bool) error {
	if c.proof.IsZero() {
		return fmt.Errorf("%w: a copy without its writer's signature", ErrForbidden)
	}
	op, ok := putOp(c.proof.Mode)
	if !ok {
		return fmt.Errorf("%w: put mode %d", ErrForbidden, c.proof.Mode)
	}
	if replace && c.version == 0 {
		return fmt.Errorf("%w: a replacing copy without a version", ErrForbidden)
	}
	if max := n.copyVersionCap(c.proof.Auth); c.version > max {
		return fmt.Errorf("%w: version %d past what its signature allows (%d)", ErrForbidden, c.version, max)
	}
	return verifyGrant(op, k, c.data, c.proof.Prev, c.proof.Auth)
}

// copyVersionCap is the greatest version an owner can have stamped a put
// with consent a: while a was good (its expiry and GrantSkew), Retention
// ahead, and a minute for the clocks of owner and replica.
func (n *Node) copyVersionCap(a wire.D2Auth) uint64 {
	const slack = time.Minute
	if a.Expires > 1<<62 {
		return 0
	}
	return a.Expires + uint64(n.cfg.Retention+GrantSkew+slack)
}

// supersedes reports whether a copy with proof p and hash sum may replace
// a held one with proof held and hash heldSum (the copies' versions
// already said it is newer): refused when p's grant is older than the
// held one's by more than GrantSkew, or when the held copy was put in
// place of exactly these bytes; taken whatever the expiries when p
// expected the held bytes. A held copy without a proof (stored before
// proofs were kept, or by the node-local API) is always superseded.
func supersedes(p wire.D2Proof, sum [hashBytes]byte, held wire.D2Proof, heldSum [hashBytes]byte) bool {
	switch {
	case held.IsZero() || p.IsZero():
		return true
	case p.Mode == wire.D2PutIfHash && bytes.Equal(p.Prev, heldSum[:]):
		return true // the writer's next version of the held bytes
	case held.Mode == wire.D2PutIfHash && bytes.Equal(held.Prev, sum[:]):
		return false // the held copy's predecessor, again
	}
	return p.Auth.Expires+uint64(GrantSkew) >= held.Auth.Expires
}

// verifyGrant checks a's signature of op on k over data (and prev), at
// any time: authorizeLate's check without the expiry's.
func verifyGrant(op d2key.Op, k id.ID, data, prev []byte, a wire.D2Auth) error {
	at := time.Unix(0, int64(min(a.Expires, 1<<63-1)))
	return authorizeLate(op, k, data, prev, a, at, 0)
}

// BlockOf is the block's bytes in a record of a node's D2 engine (the
// engine keeps the writer's proof before them): for tools and tests that
// read an engine themselves.
func BlockOf(rec []byte) []byte {
	_, data := decodeStored(rec)
	return data
}
