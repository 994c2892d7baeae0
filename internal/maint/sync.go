package maint

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"triad/internal/dhash/frag"
	"triad/internal/id"
	"triad/internal/merkle"
	"triad/internal/node"
	"triad/internal/store"
	"triad/internal/wire"
)

// TreeStore is what synchronization reads of a storage engine: its Merkle
// tree, whether it holds a key, and a fragment it holds (to check it
// against its key). store.Engine has it.
type TreeStore interface {
	TreeNode(p merkle.Prefix) (merkle.Node, error)
	TreeChildren(p merkle.Prefix) ([]merkle.Node, error)
	TreeKeys(p merkle.Prefix, lo, hi id.ID, max int) ([]id.ID, error)
	Stat(key id.ID) (store.Meta, error)
	Get(key id.ID) ([]byte, store.Meta, error)
}

// describe is the TreeInfo of our tree's node at p, seen from (lo, hi].
func describe(e TreeStore, p merkle.Prefix, lo, hi id.ID) (*wire.TreeInfo, error) {
	n, err := e.TreeNode(p)
	if err != nil {
		return nil, err
	}
	info := &wire.TreeInfo{Count: n.Count}
	if n.Count == 0 {
		return info, nil
	}
	info.Hash = append([]byte(nil), n.Hash[:]...)
	if n.Leaf() {
		keys, err := e.TreeKeys(p, lo, hi, wire.MaxTreeKeys)
		if err != nil {
			return nil, err
		}
		// Each key's expiry lets the asker fetch the longest-lived first;
		// its size, count what it has queued.
		info.Keys, info.Expiries, info.Sizes = keys, make([]int64, len(keys)), make([]uint64, len(keys))
		for i, k := range keys {
			meta, err := e.Stat(k)
			if err != nil {
				continue
			}
			if !meta.Expiry.IsZero() {
				info.Expiries[i] = meta.Expiry.UnixNano()
			}
			info.Sizes[i] = uint64(meta.Size)
		}
		return info, nil
	}
	kids, err := e.TreeChildren(p)
	if err != nil {
		return nil, err
	}
	for _, k := range kids {
		if k.Prefix.OverlapsArc(lo, hi) {
			info.Children = append(info.Children, wire.TreeChild{Prefix: k.Prefix.Encode(), Count: k.Count, Hash: append([]byte(nil), k.Hash[:]...)})
		}
	}
	return info, nil
}

// sameNode reports whether our node n and a neighbour's match.
func sameNode(n merkle.Node, count uint64, hash []byte) bool {
	return n.Count == count && (count == 0 || bytes.Equal(n.Hash[:], hash))
}

// diff is what comparing one tree node found: keys we lack, and child
// nodes that differ.
type diff struct {
	missing []id.ID
	expiry  []int64  // of missing, by position, when known
	size    []uint64 // of missing, by position, when known
	descend []merkle.Prefix
	extend  []extension // keys we hold that the partner keeps longer
}

// An extension is a later expiry a partner listed for a key we hold.
type extension struct {
	key    id.ID
	expiry time.Time
}

// compare sets the partner's node at p against ours. Nothing the partner
// said is trusted beyond what it can name: keys and children outside p or
// outside (lo, hi] are ignored, so a neighbour cannot make us pull a key
// that is not ours to keep.
//
// At now, a copy of ours that has expired counts as missing, so a fetch
// brings it back with the partner's expiry; and one the partner keeps
// longer is extended to the partner's expiry (a re-put that reached only
// some holders). The store caps any expiry at its MaxRetention.
func compare(e TreeStore, p merkle.Prefix, info *wire.TreeInfo, lo, hi id.ID, now time.Time) (diff, error) {
	var d diff
	mine, err := e.TreeNode(p)
	if err != nil || sameNode(mine, info.Count, info.Hash) {
		return d, err
	}
	for i, k := range info.Keys {
		if k.Width() != id.Bytes || !p.Contains(k.Bytes()) || !k.In(lo, hi) {
			continue
		}
		ok, err := holds(e, k)
		if err != nil {
			return d, err
		}
		theirs := at(info.Expiries, i)
		var meta store.Meta
		if ok {
			if meta, err = e.Stat(k); err != nil {
				return d, err
			}
			ok = meta.Expiry.IsZero() || meta.Expiry.After(now) // zero: not known
		}
		switch {
		case !ok:
			d.missing = append(d.missing, k)
			d.expiry = append(d.expiry, theirs)
			d.size = append(d.size, at(info.Sizes, i))
		case theirs != 0 && time.Unix(0, theirs).After(meta.Expiry):
			d.extend = append(d.extend, extension{key: k, expiry: time.Unix(0, theirs)})
		}
	}
	if len(info.Children) == 0 {
		return d, nil
	}
	kids, err := e.TreeChildren(p)
	if err != nil {
		return d, err
	}
	ours := make(map[merkle.Prefix]merkle.Node, len(kids))
	for _, k := range kids {
		ours[k.Prefix] = k
	}
	for _, c := range info.Children {
		cp, err := merkle.DecodePrefix(c.Prefix)
		if err != nil || cp.Depth() != p.Depth()+1 || !cp.OverlapsArc(lo, hi) {
			continue
		}
		if first, _ := cp.Bounds(id.Bytes); !p.Contains(first) {
			continue
		}
		if n, ok := ours[cp]; ok && sameNode(n, c.Count, c.Hash) {
			continue
		}
		d.descend = append(d.descend, cp)
	}
	return d, nil
}

// holds reports whether e holds a copy of key that counts. A copy found
// damaged is quarantined, and a fragment that does not verify against key
// (package frag: a forged one, under a whole block's key, or one of an
// older format) is no copy: either counts as missing, so that the
// neighbour's good copy is fetched for it. A whole copy counts: the engine
// checked its hash before storing it. Only fragments are read, and only
// those in leaves that differ from the neighbour's.
func holds(e TreeStore, key id.ID) (bool, error) {
	meta, err := e.Stat(key)
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrCorrupt):
		return false, nil
	case err != nil:
		return false, err
	case !meta.Opaque:
		return true, nil
	}
	data, _, err := e.Get(key)
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrCorrupt):
		return false, nil
	case err != nil:
		return false, err
	}
	_, err = frag.Check(key, data)
	return err == nil, nil
}

// at is list[i], or zero past its end (a neighbour may leave a list out).
func at[T any](list []T, i int) T {
	var zero T
	if i < len(list) {
		return list[i]
	}
	return zero
}

// comparer sets a neighbour's answer about its tree node at p against our
// store: compare (what we lack) or reverseCompare (what it lacks).
// now is the time of the answer: a copy of ours expired by then counts
// as missing (zero: none has).
type comparer func(e TreeStore, p merkle.Prefix, info *wire.TreeInfo, lo, hi id.ID, now time.Time) (diff, error)

// errNotTreeInfo is a neighbour's answer of the wrong type.
var errNotTreeInfo = errors.New("maint: answer to a tree query is not a TreeInfo")

// askTree asks dst for its tree node at p, seen from (lo, hi], and compares
// the answer with our store off the event loop; done gets the difference,
// or the error of the call (rpc.ErrTimeout: no answer) or of the
// comparison. It returns false, and done never runs, when the call is
// refused (too many in flight). Local maintenance and sweeps both walk a
// neighbour's tree with it; sync, which they pass with the root, lets a
// synchronization that would repeat the last clean one stop there (see
// syncMemo).
func (m *Maint) askTree(env node.Env, from, dst wire.NodeRef, p merkle.Prefix, lo, hi id.ID, cmp comparer, sync *syncMemo, done func(node.Env, diff, error)) bool {
	m.Stats.NodesCompared++
	return m.rt.Call(env, dst.Addr, from, dst.ID, &wire.TreeQuery{Prefix: p.Encode(), Lo: lo, Hi: hi}, 0,
		func(env node.Env, msg wire.Msg, err error) {
			info, isInfo := msg.(*wire.TreeInfo)
			if err == nil && !isInfo {
				err = errNotTreeInfo
			}
			if err != nil {
				done(env, diff{}, err)
				return
			}
			m.Stats.KeysCompared += uint64(len(info.Keys))
			now := env.Now()
			var last syncRoots
			var haveLast bool
			if sync != nil {
				sync.seen.theirs = rootOf(info.Count, info.Hash)
				last, haveLast = m.clean[sync.key]
			}
			env.Offload(&work{
				run: func(e store.Engine) (any, error) {
					if sync == nil {
						return cmp(e, p, info, lo, hi, now)
					}
					mine, err := e.TreeNode(p)
					if err != nil {
						return diff{}, err
					}
					ours := rootOf(mine.Count, mine.Hash[:])
					if haveLast && last.theirs == sync.seen.theirs && last.ours == ours {
						return syncResult{ours: ours, same: true}, nil
					}
					d, err := cmp(e, p, info, lo, hi, now)
					return syncResult{d: d, ours: ours}, err
				},
				done: func(env node.Env, res any, err error) {
					d, _ := res.(diff)
					if sr, ok := res.(syncResult); ok {
						d = sr.d
						sync.seen.ours = sr.ours
						if sr.same {
							m.Stats.Unchanged++
						}
					}
					done(env, d, err)
				},
			})
		})
}

// A syncMemo lets a synchronization that would repeat the last clean one
// (same neighbour, same arc, same direction, and neither root changed
// since) stop after its first query: with equal trees a walk finds what it
// found then, nothing. Periodic rounds on a quiet ring cost one query per
// neighbour this way, whatever the range holds.
type syncMemo struct {
	key  syncKey
	seen syncRoots // the roots of this synchronization's first query
}

// syncKey names a synchronization.
type syncKey struct {
	peer, lo, hi id.ID
	reverse      bool
}

// syncRoots are both trees' roots, as count and hash.
type syncRoots struct{ theirs, ours string }

type syncResult struct {
	d    diff
	ours string
	same bool
}

func rootOf(count uint64, hash []byte) string {
	if count == 0 {
		return "0"
	}
	return fmt.Sprintf("%d:%x", count, hash)
}

// maxCleanSyncs bounds Maint.clean.
const maxCleanSyncs = 4096

// syncEnded records how a synchronization ended: clean (nothing missing,
// nothing failed, walked to the end) or not.
func (m *Maint) syncEnded(sync *syncMemo, clean bool) {
	if !clean || sync.seen.theirs == "" || sync.seen.ours == "" {
		delete(m.clean, sync.key)
		return
	}
	if m.clean == nil || len(m.clean) >= maxCleanSyncs {
		m.clean = make(map[syncKey]syncRoots)
	}
	m.clean[sync.key] = sync.seen
}

// SyncCost runs local maintenance's synchronization of the arc (lo, hi]
// between two storage engines in this goroutine, with the code a round
// runs (the neighbour's describe, our compare), and returns how many tree
// queries it took, the bytes those queries and their answers weigh on the
// wire, and the keys ours lacks. It measures what a sync costs; rounds
// run it over the network.
func SyncCost(ours, theirs TreeStore, lo, hi id.ID) (queries, bytes int, missing []id.ID, err error) {
	visit := []merkle.Prefix{merkle.Root()}
	for len(visit) > 0 {
		p := visit[len(visit)-1]
		visit = visit[:len(visit)-1]
		q := &wire.TreeQuery{Prefix: p.Encode(), Lo: lo, Hi: hi}
		info, err := describe(theirs, p, lo, hi)
		if err != nil {
			return queries, bytes, missing, err
		}
		queries++
		bytes += wire.Size(wire.Envelope{Kind: wire.Request, Msg: q}) + wire.Size(wire.Envelope{Kind: wire.Reply, Msg: info})
		d, err := compare(ours, p, info, lo, hi, time.Time{})
		if err != nil {
			return queries, bytes, missing, err
		}
		missing = append(missing, d.missing...)
		visit = append(visit, d.descend...)
	}
	return queries, bytes, missing, nil
}
