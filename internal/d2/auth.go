package d2

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"time"

	d2key "triad/internal/d2/key"
	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/wire"
)

// Every write of a client is signed by the volume's writer (RELIABILITY
// E3). A client's put, of any mode, and its delete carry the writer's
// consent (wire.D2Auth): the public key the key's volume ID is derived
// from (key.VolumeOfKey) and its signature of a d2key.Grant naming the
// request's op (the put's mode, or delete), the key, the new bytes'
// SHA-256, the expected one and an expiry. The gateway, the node the
// client asked, checks it before anything is looked up or changed, and
// refuses the request otherwise (ErrForbidden; Stats.Unauthorized), so a
// client without the volume's private key writes nothing under the
// volume: no block, no newer superblock, no lease. It relays the put to
// the key's owner as a D2Store, a node-to-node message a client cannot
// send, so the owner's decision is reached only through that check. The
// node-local API (Node.Put, Node.Delete) is the host's own and is not
// checked.
//
// The one exception is the name registry's volume (d2key.Registry),
// which no key pair derives: its records are put if absent, and a put of
// another mode or a delete of a registry key is refused, so a name, once
// taken, stays with its volume. The request is not signed, but its bytes
// must be a name record that verifies (d2key.ParseName: signed by the
// volume's writer) under the key of the name it claims: the registry
// holds nothing else.
//
// A volume whose blocks are placed as the traditional DHT places them
// (d2key.PlaceBlock, the §9 baseline that d2client's Config.Placement
// selects) stores each block under its placement, whose first bytes are
// not the volume's: its requests carry the key the writer signed
// (D2Auth.Signed), and the gateway checks that the request's key is that
// key's placement before it checks the signature.
//
// Replay: the grant names one key and one content, so a captured signed
// request can only do the same thing again to the same key until it
// expires (MaxGrantAhead at most): delete it again, or put the same
// bytes back. D2-FS writes each version of a block under a key of its
// own, so putting the same bytes back changes nothing it reads.

// ErrForbidden answers a client's write without a valid consent of the
// key's volume writer, or a registry write other than a put if absent:
// nothing was changed.
var ErrForbidden = fmt.Errorf("d2: %w: permission denied", fault.ErrBadRequest)

// Bounds of a grant's expiry against this node's clock.
const (
	// MaxGrantAhead is the farthest ahead of the node's clock a grant
	// may expire: a captured one is good for at most this long.
	MaxGrantAhead = 10 * time.Minute
	// GrantSkew is the allowance for the signer's clock behind the
	// node's: a grant expired by less is still taken.
	GrantSkew = time.Minute
)

// authorize checks a client's write on k: op, with data (put) and prev
// (if-hash), against its consent a, at now.
func authorize(op d2key.Op, k id.ID, data, prev []byte, a wire.D2Auth, now time.Time) error {
	return authorizeLate(op, k, data, prev, a, now, 0)
}

// authorizeLate is authorize taking a consent up to late past its expiry
// (a delete shown again to a replica that missed it).
func authorizeLate(op d2key.Op, k id.ID, data, prev []byte, a wire.D2Auth, now time.Time, late time.Duration) error {
	kk, err := d2key.FromID(k)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadKey, err)
	}
	if len(a.Signed) > 0 {
		// Block placement: k is the position of the key the writer signed.
		signed, err := d2key.Parse(a.Signed)
		switch {
		case err != nil:
			return fmt.Errorf("%w: the signed key: %v", ErrForbidden, err)
		case d2key.PlaceBlock(signed) != kk:
			return fmt.Errorf("%w: %v is not the block placement of the signed key %v", ErrForbidden, kk, signed)
		case signed.Volume() == d2key.Registry():
			return fmt.Errorf("%w: a registry record is never placed", ErrForbidden)
		}
		kk = signed
	}
	if kk.Volume() == d2key.Registry() {
		if op != d2key.OpIfAbsent {
			return fmt.Errorf("%w: a %s of a registry record (registry records are put if absent only)", ErrForbidden, opName(op))
		}
		rec, err := d2key.ParseName(data)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrForbidden, err)
		}
		if d2key.RegistryKey(rec.Name) != kk {
			return fmt.Errorf("%w: the record names %q, whose registry key is another", ErrForbidden, rec.Name)
		}
		return nil
	}
	if a.IsZero() {
		return fmt.Errorf("%w: a %s needs the signature of the key's volume", ErrForbidden, opName(op))
	}
	g := d2key.Grant{Op: op, Key: kk, Expires: int64(a.Expires)}
	if op != d2key.OpDelete {
		g.Sum = sha256.Sum256(data)
	}
	copy(g.Prev[:], prev)
	exp := time.Unix(0, int64(a.Expires))
	switch {
	case a.Expires > 1<<63-1 || exp.After(now.Add(MaxGrantAhead)):
		return fmt.Errorf("%w: the signature expires at %v, more than %v ahead", ErrForbidden, exp.UTC(), MaxGrantAhead)
	case now.After(exp.Add(GrantSkew + late)):
		return fmt.Errorf("%w: the signature expired at %v", ErrForbidden, exp.UTC())
	}
	if err := g.Verify(a.Pub, a.Sig); err != nil {
		return fmt.Errorf("%w: %v", ErrForbidden, err)
	}
	return nil
}

// isRegistryKey reports whether k is a name record's key.
func isRegistryKey(k id.ID) bool {
	kk, err := d2key.FromID(k)
	return err == nil && kk.Volume() == d2key.Registry()
}

// cloneAuth is a copy of a that shares no bytes with a message.
func cloneAuth(a wire.D2Auth) wire.D2Auth {
	return wire.D2Auth{Pub: bytes.Clone(a.Pub), Expires: a.Expires, Sig: bytes.Clone(a.Sig), Signed: bytes.Clone(a.Signed)}
}

// Every holder checks too (issue 44): a node certificate does not stand
// for a volume's writer. With Config.CheckPeers (on in DefaultConfig) the
// owner checks the consent a gateway relays with a put (D2Store.Auth)
// before it decides anything, and a holder drops a copy only with the
// writer's signed delete (D2Drop.Auth), which sync shows again to a
// replica that missed the delete (tombs.go): a signature of a delete is
// taken up to Config.Tombstone after it expired, since a replica down
// during the delete is told later. Registry records are never dropped and
// never replaced by other bytes, whoever asks. Every other copy a node
// takes from another (a replica's store, a sync's push or pull, a
// pointer's fetch, a get's repair) carries the writer's consent it was
// put with, and is checked against it (proof.go).

// checkRelayedPut checks the consent of a put a gateway relayed to this
// owner (D2Store Primary).
func (n *Node) checkRelayedPut(env node.Env, m *wire.D2Store) error {
	if !n.cfg.CheckPeers {
		return nil
	}
	op, ok := putOp(m.Mode)
	if !ok {
		return fmt.Errorf("%w: put mode %d", ErrForbidden, m.Mode)
	}
	var prev []byte
	if m.Mode == wire.D2PutIfHash {
		prev = m.Prev
	}
	if err := authorize(op, m.Key, m.Data, prev, m.Auth, env.Now()); err != nil {
		n.Stats.Unauthorized++
		return err
	}
	return nil
}

// checkDrop checks a holder's D2Drop: the writer's signed delete of the
// key, taken up to Config.Tombstone past its expiry; a registry record is
// never dropped.
func (n *Node) checkDrop(env node.Env, m *wire.D2Drop) error {
	if !n.cfg.CheckPeers {
		return nil
	}
	err := authorizeLate(d2key.OpDelete, m.Key, nil, nil, m.Auth, env.Now(), n.cfg.Tombstone)
	if err != nil {
		n.Stats.Unauthorized++
	}
	return err
}

// putOp is the grant op of a put mode, false for an unknown mode.
func putOp(m wire.D2PutMode) (d2key.Op, bool) {
	switch m {
	case wire.D2PutKeep:
		return d2key.OpKeep, true
	case wire.D2PutReplace:
		return d2key.OpReplace, true
	case wire.D2PutIfAbsent:
		return d2key.OpIfAbsent, true
	case wire.D2PutIfHash:
		return d2key.OpIfHash, true
	}
	return 0, false
}

// authorizeRequest checks a client's D2Put or D2Delete: nil for the
// requests that write nothing. A put of an unknown mode is left to
// Validate, which refuses it.
func (n *Node) authorizeRequest(env node.Env, m wire.Msg) error {
	var err error
	switch m := m.(type) {
	case *wire.D2Put:
		var prev []byte
		if m.Mode == wire.D2PutIfHash {
			prev = m.Prev
		}
		if op, ok := putOp(m.Mode); ok {
			err = authorize(op, m.Key, m.Data, prev, m.Auth, env.Now())
		}
	case *wire.D2Delete:
		err = authorize(d2key.OpDelete, m.Key, nil, nil, m.Auth, env.Now())
	}
	if err != nil {
		n.Stats.Unauthorized++
	}
	return err
}

func opName(op d2key.Op) string {
	switch op {
	case d2key.OpDelete:
		return "delete"
	case d2key.OpReplace:
		return "put that replaces"
	case d2key.OpKeep:
		return "put"
	case d2key.OpIfAbsent:
		return "put if absent"
	}
	return "conditional replace"
}
