package d2

import (
	"fmt"
	"slices"
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
// (long enough for a partition to heal or a restarted node to come back)
// or until it has caught up with a vouching majority of the part's
// holders (settle.go), and says so in its answers (wire.D2Block.Unsure, D2KeyList.Unsure); an
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

// maxDoubts bounds the arcs a node keeps. An arc already doubted is
// doubted again, not added (the same neighbours fail again and again);
// past the bound the two arcs whose cover is smallest merge into it: one
// arc over both, which may doubt keys between them. Merging the oldest
// two instead let 10 minutes of real churn (a kill every 3-6 s on 8
// nodes) grow arcs over every node's own range, and no holder vouched.
const maxDoubts = 64

// rangeFrom is the low end of the node's replica range as far as it
// knows: its r-th predecessor's position, its own (the whole ring) while
// it knows none, and ok false while its list is short (a small ring, or a
// list being refilled after a failure): then it knows only that the range
// reaches past the farthest it knows, which is given.
func (n *Node) rangeFrom() (lo id.ID, ok bool) {
	if lo, ok := n.replicaLo(); ok {
		return lo, true
	}
	if len(n.preds) == 0 {
		return n.pos, true
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
		defer n.settleDoubts(env) // once the range is saved
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
	until := now.Add(n.cfg.Doubt)
	n.doubts = dropExpired(n.doubts, now)
	n.Stats.Doubts++
	n.doubtGen++
	for i, d := range n.doubts {
		if arcWithin(lo, hi, d.lo, d.hi) {
			n.doubts[i].until = until
			return
		}
	}
	n.doubts = slices.DeleteFunc(n.doubts, func(d doubt) bool { return arcWithin(d.lo, d.hi, lo, hi) })
	n.doubts = append(n.doubts, doubt{lo: lo, hi: hi, until: until})
	if len(n.doubts) > maxDoubts {
		n.doubts = mergeClosest(n.doubts)
	}
}

// arcWithin reports whether the arc (a, b] lies within (c, d]; c == d is
// the whole ring.
func arcWithin(a, b, c, d id.ID) bool {
	if c == d {
		return true
	}
	if a == b {
		return false // the whole ring, in less than it
	}
	span := c.Distance(d)
	da, db := c.Distance(a), c.Distance(b)
	return da.Cmp(db) < 0 && db.Cmp(span) <= 0
}

// mergeClosest replaces the two arcs of l, neighbours around the ring,
// whose hull is shortest by that hull, kept until the later of their ends.
func mergeClosest(l []doubt) []doubt {
	slices.SortFunc(l, func(a, b doubt) int { return a.lo.Cmp(b.lo) })
	bi, bj := 0, 1
	var best id.ID
	for i := range l {
		j := (i + 1) % len(l)
		h := hull(l[i], l[j])
		if w := h.lo.Distance(h.hi); h.lo != h.hi && (best.IsZero() || w.Cmp(best) < 0) {
			best, bi, bj = w, i, j
		}
	}
	h := hull(l[bi], l[bj])
	h.until = l[bi].until
	if l[bj].until.After(h.until) {
		h.until = l[bj].until
	}
	l[bi] = h
	return slices.Delete(l, bj, bj+1)
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

// hull is the shortest arc that covers a and b: one of them if it holds
// the other, else from one's low end to the other's high end, whichever
// way round is shorter and covers both; the whole ring if none does.
func hull(a, b doubt) doubt {
	var best doubt
	var width id.ID
	for _, c := range []doubt{{lo: a.lo, hi: a.hi}, {lo: b.lo, hi: b.hi}, {lo: a.lo, hi: b.hi}, {lo: b.lo, hi: a.hi}} {
		if c.lo == c.hi || !arcWithin(a.lo, a.hi, c.lo, c.hi) || !arcWithin(b.lo, b.hi, c.lo, c.hi) {
			continue
		}
		if w := c.lo.Distance(c.hi); width.IsZero() || w.Cmp(width) < 0 {
			best, width = c, w
		}
	}
	if width.IsZero() {
		return doubt{lo: a.lo, hi: a.lo} // the whole ring
	}
	return best
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
	if lo == hi && from != n.pos {
		return hi.In(from, n.pos)
	}
	return arcWithin(lo, hi, from, n.pos)
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
