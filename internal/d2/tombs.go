package d2

import (
	"fmt"
	"time"

	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/wire"
)

// Deletes that stay deleted. A delete reaches the holders its gateway
// knows; one that was down keeps its copy, and, without a record of the
// delete, the owner's next sync would take a pointer to that copy and
// fetch it back. So each node that is told to delete a key remembers it
// for Config.Tombstone (at most Config.MaxTombstones keys, the oldest
// forgotten first): its sync takes no pointer to a deleted key and tells
// a replica that still holds one to drop it (D2Drop); it takes no pointer
// handed over for one; and it refuses a copy pushed to it (a store
// without Replace: sync's and hand-off's) while it remembers the delete.
// A put decided at the owner replaces (D2Store.Replace) and so ends the
// record wherever it lands.
//
// What this does not cover: an owner that was down during the delete
// comes back with its copy; its successors refuse its pushes while they
// remember the delete, but its own copy stays, and is pushed again once
// they have forgotten (a replica's word cannot tell a stale copy from a
// put made after the delete, which no clock orders across nodes).

// errDeleted refuses a pushed copy of a key deleted here recently.
var errDeleted = fmt.Errorf("d2: %w: deleted here recently", fault.ErrNotFound)

// tomb is one deleted key and when.
type tomb struct {
	key id.ID
	at  time.Time
}

// tombs are the keys deleted here recently: a map for lookups and a list
// in the order of deletion for forgetting (entries whose key was deleted
// again or put since are skipped there). The map keeps each delete's
// signed consent, which a replica that missed the delete is shown
// (dropDeleted): it drops nothing on a node's word alone.
type tombs struct {
	at    map[id.ID]time.Time
	auth  map[id.ID]wire.D2Auth
	order []tomb
}

// add remembers k as deleted at now, forgetting the oldest past max.
func (t *tombs) add(k id.ID, now time.Time, auth wire.D2Auth, max int) {
	if t.at == nil {
		t.at, t.auth = map[id.ID]time.Time{}, map[id.ID]wire.D2Auth{}
	}
	t.at[k] = now
	if auth.IsZero() {
		delete(t.auth, k)
	} else {
		t.auth[k] = cloneAuth(auth)
	}
	t.order = append(t.order, tomb{k, now})
	for len(t.at) > max {
		t.pop()
	}
	if len(t.order) > 2*max+16 {
		t.compact()
	}
}

// pop forgets the oldest entry of the list, and its key if that is its
// latest delete.
func (t *tombs) pop() {
	e := t.order[0]
	t.order = t.order[1:]
	if at, ok := t.at[e.key]; ok && at.Equal(e.at) {
		delete(t.at, e.key)
		delete(t.auth, e.key)
	}
}

// compact drops the list's stale entries.
func (t *tombs) compact() {
	live := t.order[:0]
	for _, e := range t.order {
		if at, ok := t.at[e.key]; ok && at.Equal(e.at) {
			live = append(live, e)
		}
	}
	t.order = live
}

// has reports whether k was deleted here within ttl of now.
func (t *tombs) has(k id.ID, now time.Time, ttl time.Duration) bool {
	at, ok := t.at[k]
	return ok && now.Sub(at) < ttl
}

// clear forgets k's delete: it was put again.
func (t *tombs) clear(k id.ID) { delete(t.at, k); delete(t.auth, k) }

// prune forgets the deletes older than ttl.
func (t *tombs) prune(now time.Time, ttl time.Duration) {
	for len(t.order) > 0 && now.Sub(t.order[0].at) >= ttl {
		t.pop()
	}
	if len(t.at) == 0 {
		t.order = nil
	}
}

// Tombstones is the number of deleted keys the node remembers.
func (n *Node) Tombstones() int { return len(n.tombs.at) }

// deleted reports whether k was deleted here recently.
func (n *Node) deleted(env node.Env, k id.ID) bool {
	return n.tombs.has(k, env.Now(), n.cfg.Tombstone)
}

// deleteHere deletes k as a client's delete asks: the copy goes and the
// delete is remembered, with its consent auth.
func (n *Node) deleteHere(env node.Env, k id.ID, auth wire.D2Auth) bool {
	if n.cfg.Tombstone > 0 {
		n.tombs.add(k, env.Now(), auth, n.cfg.MaxTombstones)
	}
	return n.dropLocal(env, k)
}

// dropDeleted tells t, a replica that listed k, that k was deleted here.
func (n *Node) dropDeleted(env node.Env, t wire.D2Ref, k id.ID) {
	n.call(env, t.Node.Addr, &wire.D2Drop{Key: k, Auth: n.tombs.auth[k]}, func(env node.Env, reply wire.Msg, err error) {
		if s, ok := reply.(*wire.D2StoreDone); err == nil && ok && s.Copies > 0 {
			n.Stats.DeletesRepeated++
		}
	})
}
