package d2

import (
	"fmt"
	"time"

	"triad/internal/id"
	"triad/internal/node"
)

// Doubt. A node holds the keys of its replica range: (lo, pos], where lo
// is its r-th predecessor's position, since a key's holders are its owner
// and the owner's r-1 successors. When that range grows because nodes
// failed or were cut off, not because they handed their keys over, the
// keys that came in were held until then by other nodes, and whatever
// copies this node has of them (strays from an earlier range, or none)
// may be older than theirs. If every holder of a key is in that state (a
// partition cut off all r holders, every node restarted and the holders
// have not joined yet), the owner would answer a Latest or decide a
// conditional put from a stale copy: a D2-FS mount would see an old lease
// and two writers could hold it (issue 43, found by sim d2's chaos
// experiment).
//
// So a node doubts the part of its range that grew, for Config.Doubt
// (long enough for a partition to heal or a restarted node to come back),
// and says so in its answers (wire.D2Block.Unsure, D2KeyList.Unsure); an
// owner answers a Latest or a conditional put only if a majority of the
// key's holders vouch for it, and otherwise answers unavailable. A
// majority, not one: a partition that cuts a key's holders in two leaves
// a vouching holder on each side, and the side without the majority
// would answer from the copies it had when the cut came while the other
// side replaces them (two D2-FS writers each holding the lease). The
// range is kept across restarts (the position file's held-from line), so
// that after a cold start a node vouches for what it held before, and
// doubts what the first, sparse ring hands it. A node that starts with
// no saved range (a new node, or a wiped disk) joins a ring whose holders
// are its successors, and trusts the range it joins into; so does a node
// that moved (balance.go).

// doubt is an arc of keys a node does not vouch for until a time.
type doubt struct {
	lo, hi id.ID // the arc (lo, hi]
	until  time.Time
}

// maxDoubts bounds the arcs a node keeps; past it, the oldest two merge
// into one arc that covers both.
const maxDoubts = 16

// rangeFrom is the low end of the node's replica range as far as it
// knows: its r-th predecessor's position, its own (the whole ring) while
// it knows none, and ok false while its list is short (a small ring, or a
// list being refilled after a failure): then it knows only that the range
// reaches past the farthest it knows, which is given.
func (n *Node) rangeFrom() (lo id.ID, ok bool) {
	switch {
	case len(n.preds) == 0:
		return n.pos, true
	case len(n.preds) >= n.cfg.Replicas:
		return n.preds[n.cfg.Replicas-1].Pos, true
	}
	return n.preds[len(n.preds)-1].Pos, false
}

// noteRange records the node's replica range after its predecessors
// changed, and doubts the part that grew. A short list tells nothing: a
// list filling up after a join is no growth, and one thinned by failures
// is measured once stabilization has filled it again.
func (n *Node) noteRange(env node.Env) {
	if !n.joined || !n.heldLoaded {
		return // loadHeld's answer calls it again
	}
	lo, ok := n.rangeFrom()
	switch {
	case !ok:
		return
	case !n.heldKnown:
		n.heldLo, n.heldKnown = lo, true
	case lo == n.heldLo:
		return
	case n.heldLo != n.pos && (lo == n.pos || n.heldLo.Between(lo, n.pos)):
		// Grew: (lo, heldLo] came in (lo == pos: the whole ring did).
		n.addDoubt(env, lo, n.heldLo)
		n.heldLo = lo
	default:
		n.heldLo = lo // shrank: nothing came in
	}
	n.savePosition(env)
}

// loadHeldWork reads the position file for the range an earlier run
// held, off the event loop.
type loadHeldWork struct{ pos id.ID }

func (w *loadHeldWork) Run(s node.Storage) (any, error) {
	lo, ok := loadHeld(s, w.pos)
	return heldLoaded{lo: lo, ok: ok}, nil
}

func (w *loadHeldWork) String() string { return "d2-load-held" }

type heldLoaded struct {
	lo id.ID
	ok bool
}

// tookHeld takes the range an earlier run saved, and doubts what the
// range joined into since adds to it.
func (n *Node) tookHeld(env node.Env, h heldLoaded) {
	n.heldLoaded = true
	if h.ok && !n.heldKnown {
		n.heldLo, n.heldKnown = h.lo, true
	}
	n.noteRange(env)
}

// addDoubt doubts the arc (lo, hi] for Config.Doubt from now.
func (n *Node) addDoubt(env node.Env, lo, hi id.ID) {
	if n.cfg.Doubt <= 0 {
		return
	}
	now := env.Now()
	n.doubts = dropExpired(n.doubts, now)
	if len(n.doubts) == maxDoubts {
		h := hull(n.doubts[0], n.doubts[1])
		h.until = n.doubts[1].until
		n.doubts = append(n.doubts[:1:1], n.doubts[2:]...)
		n.doubts[0] = h
	}
	n.doubts = append(n.doubts, doubt{lo: lo, hi: hi, until: now.Add(n.cfg.Doubt)})
	n.Stats.Doubts++
}

// dropExpired removes the doubts that ended by now.
func dropExpired(l []doubt, now time.Time) []doubt {
	out := l[:0]
	for _, d := range l {
		if now.Before(d.until) {
			out = append(out, d)
		}
	}
	return out
}

// hull is an arc that covers a and b: from a's low end to b's high end,
// or the other way round, whichever is shorter.
func hull(a, b doubt) doubt {
	ab, ba := a.lo.Distance(b.hi), b.lo.Distance(a.hi)
	if ab.Cmp(ba) <= 0 {
		return doubt{lo: a.lo, hi: b.hi}
	}
	return doubt{lo: b.lo, hi: a.hi}
}

// vouches reports whether the node vouches for its answers about the arc
// (lo, hi] (lo == hi: the one key hi): the arc lies in its replica range
// and meets none of its doubts.
func (n *Node) vouches(env node.Env, lo, hi id.ID) bool {
	if !n.joined || !n.heldLoaded {
		return false
	}
	if !n.inHeld(lo, hi) {
		return false
	}
	now := env.Now()
	for _, d := range n.doubts {
		if now.Before(d.until) && arcsMeet(lo, hi, d.lo, d.hi) {
			return false
		}
	}
	return true
}

// quorum is the vouches a Latest or a conditional put needs among a key's
// holders: a majority of them (the ring may have fewer than r nodes).
func quorum(holders int) int { return holders/2 + 1 }

// vouchQuorum is the quorum among this node's replica set as owner: it
// and its successors, up to r.
func (n *Node) vouchQuorum() int { return quorum(1 + len(n.replicaTargets())) }

// vouchesFor is vouches for the one key k.
func (n *Node) vouchesFor(env node.Env, k id.ID) bool { return n.vouches(env, k, k) }

// inHeld reports whether (lo, hi] (lo == hi: the key hi) lies in the
// node's replica range as last recorded (heldLo == pos: the whole ring),
// or anywhere if none was recorded yet.
func (n *Node) inHeld(lo, hi id.ID) bool {
	from := n.heldLo
	if !n.heldKnown {
		// No full list yet: a ring of r nodes or fewer, each holding every
		// key, or a new node's list still filling, whose successors hold
		// its keys and answer beside it.
		from = n.pos
	}
	if from == n.pos {
		return true
	}
	if lo == hi {
		return hi.In(from, n.pos)
	}
	span := from.Distance(n.pos)
	dl, dh := from.Distance(lo), from.Distance(hi)
	return dl.Cmp(dh) < 0 && dh.Cmp(span) <= 0
}

// arcsMeet reports whether the arcs (a, b] and (c, d] share a key; a
// == b is the one key b.
func arcsMeet(a, b, c, d id.ID) bool {
	if a == b {
		return b.In(c, d)
	}
	return b.In(c, d) || d.In(a, b)
}

// errUnvouched answers a Latest or a conditional put of k that no holder
// vouched for.
func errUnvouched(k id.ID) error {
	return fmt.Errorf("%w: no holder of %s vouches for its copy yet: they took it over through failures, and its earlier holders may hold a newer one (they are waited for up to the doubt time)", ErrUnavailable, k.Short())
}
