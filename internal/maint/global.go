package maint

import (
	"slices"
	"time"

	"triad/internal/id"
	"triad/internal/merkle"
	"triad/internal/node"
	"triad/internal/ring"
	"triad/internal/store"
	"triad/internal/wire"
)

// sweep is one vnode's global maintenance (UsenetDHT §4.4, Figure 4): it
// walks the keys the host stores outside the vnode's replica range, finds
// each stretch's current successor, asks that successor's tree which of
// them it lacks (a reverse synchronization), and hands those over. It
// never deletes: the copies it hands over stay here too.
type sweep struct {
	m      *Maint
	v      *ring.Vnode
	st     *vnodeState
	cursor id.ID // keys in (cursor, end] are still to place
	end    id.ID // the k-th predecessor: the range's start
	// The stretch being placed: keys in (lo, hi] go to dst.
	lo, hi   id.ID
	dst      wire.NodeRef
	visit    []merkle.Prefix
	push     repairQueue
	queries  int
	pushes   int
	waiting  bool      // queued on the repair budget
	placing  bool      // a stretch is being placed
	sync     *syncMemo // the stretch's synchronization
	dirty    bool      // it found something to hand over, or failed
	finished bool
	// extra are stretches inside the range to hand on before the walk:
	// a suspect predecessor's first copies (audit.go). onExtra: the
	// stretch being placed is one, so the cursor stays.
	extra   []stretch
	onExtra bool
}

// A stretch is keys in (lo, hi] to place with dst.
type stretch struct {
	lo, hi id.ID
	dst    wire.NodeRef
}

// maxStretches bounds the successors one sweep places keys with.
const maxStretches = 64

func (m *Maint) startSweep(env node.Env, v *ring.Vnode, st *vnodeState) {
	st.sweepDue = env.Now().Add(m.jitter(env, m.sweepInterval()))
	end := replicaStart(v, m.cfg.Replicas, m.listMax, m.suspected(env.Now()))
	if end == v.Self().ID {
		return // the whole ring is ours: nothing lies outside
	}
	// A sweep that stopped at maxStretches is taken up where it stopped.
	cursor := v.Self().ID
	if c := st.sweepFrom; !c.IsZero() && c.In(cursor, end) && c != end {
		cursor = c
	}
	st.sweepFrom = id.ID{}
	s := &sweep{m: m, v: v, st: st, cursor: cursor, end: end}
	if x, ok := m.handOn(env, v); ok {
		s.extra = append(s.extra, x)
	}
	st.sweep = s
	s.next(env, 0)
}

// handOn is the stretch v hands on for its suspect predecessors, if it
// has one: when the nearest predecessors on other machines are suspects,
// v is the first honest successor of their keys, (p, s] from the first
// honest predecessor p to the nearest suspect s, and the k-th copy
// belongs on v's (k-1)-th honest successor, whose own range, walked past
// suspects it has not audited, would not reach them.
func (m *Maint) handOn(env node.Env, v *ring.Vnode) (stretch, bool) {
	k, self := m.cfg.Replicas, v.Self()
	if k < 2 {
		return stretch{}, false
	}
	now := env.Now()
	var hi id.ID
	for _, p := range v.Preds() {
		if p.SameMachine(self) || m.chord.IsDead(env, p) {
			continue
		}
		if m.Suspect(now, p.Addr) {
			if hi.IsZero() {
				hi = p.ID
			}
			continue
		}
		if hi.IsZero() {
			return stretch{}, false
		}
		dst := nthOther(v.Succs(), self, m.excluded(env), k-1)
		if dst.IsZero() {
			return stretch{}, false
		}
		return stretch{lo: p.ID, hi: hi, dst: dst}, true
	}
	return stretch{}, false
}

// nthOther is the n-th (from 1) of list on machines other than self's and
// each other's, and not dead; zero if the list runs out.
func nthOther(list []wire.NodeRef, self wire.NodeRef, dead func(wire.NodeRef) bool, n int) wire.NodeRef {
	seen := []wire.NodeRef{self}
	for _, p := range list {
		if p.IsZero() || dead(p) || slices.ContainsFunc(seen, p.SameMachine) {
			continue
		}
		seen = append(seen, p)
		if len(seen) == n+1 {
			return p
		}
	}
	return wire.NodeRef{}
}

// next finds the first stored key after the cursor that is not ours and
// looks up where it belongs.
func (s *sweep) next(env node.Env, stretches int) {
	m := s.m
	if s.finished {
		return
	}
	if stretches == maxStretches {
		s.st.sweepFrom = s.cursor
		s.finish(env)
		return
	}
	if len(s.extra) > 0 {
		x := s.extra[0]
		s.extra = s.extra[1:]
		s.onExtra = true
		s.place(env, stretches, x.lo, x.hi, x.dst)
		return
	}
	if s.cursor == s.end {
		s.finish(env)
		return
	}
	cursor, end := s.cursor, s.end
	env.Offload(&work{
		run: func(e store.Engine) (any, error) { return firstKey(e, cursor, end) },
		done: func(env node.Env, res any, err error) {
			key, _ := res.(id.ID)
			if err != nil || key.IsZero() {
				s.finish(env)
				return
			}
			m.chord.Lookup(env, key, ring.LookupOptions{}, func(env node.Env, r ring.Result) {
				if r.Err != nil || len(r.Succs) == 0 {
					m.Stats.Failed++
					s.finish(env)
					return
				}
				dst := r.Succs[0]
				// Keys up to the successor go to it; past the end of what
				// is not ours, they are ours.
				hi := dst.ID
				if !hi.In(s.cursor, s.end) {
					hi = s.end
				}
				s.place(env, stretches, s.cursor, hi, dst)
			})
		},
	})
}

// place hands dst the keys of (lo, hi] it lacks, then advances.
func (s *sweep) place(env node.Env, stretches int, lo, hi id.ID, dst wire.NodeRef) {
	s.lo, s.hi, s.dst = lo, hi, dst
	s.push.reset()
	if dst.Addr == s.m.rt.Addr() {
		s.advance(env, stretches) // another vnode of ours: same storage
		return
	}
	s.visit = append(s.visit[:0], merkle.Root())
	s.sync = &syncMemo{key: syncKey{peer: dst.ID, lo: s.lo, hi: s.hi, reverse: true}}
	s.dirty = false
	s.placing = true
	s.pump(env, stretches)
}

func (s *sweep) advance(env node.Env, stretches int) {
	if s.onExtra {
		s.onExtra = false // the cursor stays: the walk has not begun
	} else {
		s.cursor = s.hi
	}
	s.m.Stats.Stretches++
	s.next(env, stretches+1)
}

func (s *sweep) finish(env node.Env) {
	if s.finished {
		return
	}
	s.finished = true
	s.m.Stats.Sweeps++
	if s.st.sweep == s {
		s.st.sweep = nil
	}
	s.m.check(env)
}

func (s *sweep) pump(env node.Env, stretches int) {
	m := s.m
	if s.finished || !s.placing {
		return // a wake-up or a continuation after the stretch was placed
	}
	if m.chord.IsDead(env, s.dst) {
		s.visit = nil
		s.push.drop()
		s.dirty = true
	}
	for s.pushes < m.cfg.Fetches && s.push.len() > 0 {
		if !m.spendable(env) {
			if !s.waiting {
				s.waiting = true
				m.await(func(env node.Env) {
					s.waiting = false
					s.pump(env, stretches)
				})
			}
			return
		}
		key, ok := s.push.take(env.Now(), &m.Stats.Expired)
		if !ok {
			m.done(env) // every key left had expired: give the transfer back
			break
		}
		s.hand(env, key, stretches)
	}
	for s.queries < m.cfg.Queries && len(s.visit) > 0 && s.push.len() < maxQueued {
		p := s.visit[len(s.visit)-1]
		s.visit = s.visit[:len(s.visit)-1]
		s.query(env, p, stretches)
	}
	if s.queries == 0 && s.pushes == 0 && len(s.visit) == 0 && s.push.len() == 0 {
		s.placing = false
		m.syncEnded(s.sync, !s.dirty)
		s.advance(env, stretches)
	}
}

// query compares the destination's tree node at p with ours, the other way
// round from local maintenance: what do we hold that it lacks?
func (s *sweep) query(env node.Env, p merkle.Prefix, stretches int) {
	m := s.m
	s.queries++
	var sync *syncMemo
	if p == merkle.Root() {
		sync = s.sync
	}
	ok := m.askTree(env, s.v.Self(), s.dst, p, s.lo, s.hi, reverseCompare, sync, func(env node.Env, d diff, err error) {
		s.queries--
		if err != nil || len(d.missing) > 0 {
			s.dirty = true
		}
		if err != nil {
			m.Stats.Failed++
		} else {
			s.push.add(d, nil)
			s.visit = append(s.visit, d.descend...)
		}
		s.pump(env, stretches)
	})
	if !ok {
		m.Stats.Failed++
		s.dirty = true
		s.queries--
	}
}

// reverseCompare finds, under p and in (lo, hi], the keys we hold that the
// other tree lacks (missing) and the children to look into.
func reverseCompare(e TreeStore, p merkle.Prefix, info *wire.TreeInfo, lo, hi id.ID, _ time.Time) (diff, error) {
	var d diff
	mine, err := e.TreeNode(p)
	if err != nil || mine.Count == 0 || sameNode(mine, info.Count, info.Hash) {
		return d, err
	}
	if len(info.Children) == 0 || mine.Leaf() {
		// Their leaf lists its keys in the range; or our few keys here
		// can be checked against their children one by one below.
		ours, err := e.TreeKeys(p, lo, hi, wire.MaxTreeKeys*merkle.Fanout)
		if err != nil {
			return d, err
		}
		if len(info.Children) == 0 {
			theirs := make(map[id.ID]bool, len(info.Keys))
			for _, k := range info.Keys {
				theirs[k] = true
			}
			for _, k := range ours {
				if theirs[k] {
					continue
				}
				// A fragment of ours is not what the successor lacks: it
				// holds another index, or needs one rebuilt.
				meta, err := e.Stat(k)
				if err == nil && meta.Opaque {
					continue
				}
				var exp int64
				if err == nil && !meta.Expiry.IsZero() {
					exp = meta.Expiry.UnixNano()
				}
				d.missing = append(d.missing, k)
				d.expiry = append(d.expiry, exp)
				d.size = append(d.size, uint64(meta.Size))
			}
			return d, nil
		}
		seen := map[merkle.Prefix]bool{}
		for _, k := range ours {
			cp := merkle.PrefixOf(k.Bytes(), p.Depth()+1)
			if !seen[cp] {
				seen[cp] = true
				d.descend = append(d.descend, cp)
			}
		}
		return d, nil
	}
	theirs := make(map[merkle.Prefix]wire.TreeChild, len(info.Children))
	for _, c := range info.Children {
		if cp, err := merkle.DecodePrefix(c.Prefix); err == nil {
			theirs[cp] = c
		}
	}
	kids, err := e.TreeChildren(p)
	if err != nil {
		return d, err
	}
	for _, k := range kids {
		if !k.Prefix.OverlapsArc(lo, hi) {
			continue
		}
		if c, ok := theirs[k.Prefix]; ok && sameNode(k, c.Count, c.Hash) {
			continue
		}
		d.descend = append(d.descend, k.Prefix)
	}
	return d, nil
}

// hand gives the destination our copy of key.
func (s *sweep) hand(env node.Env, key id.ID, stretches int) {
	m, dst := s.m, s.dst
	s.pushes++
	done := func(env node.Env) {
		s.pushes--
		s.push.finished(key)
		s.pump(env, stretches)
		m.done(env)
	}
	env.Offload(&work{
		run: func(e store.Engine) (any, error) {
			data, meta, err := e.Get(key)
			return &wire.StoreBlock{Key: key, Data: data, Expiry: meta.Expiry.UnixNano(), Fragment: meta.Opaque}, err
		},
		done: func(env node.Env, res any, err error) {
			b, _ := res.(*wire.StoreBlock)
			switch {
			case err != nil:
				m.Stats.Failed++
				done(env)
				return
			case b.Fragment:
				m.Stats.Fragments++
				done(env)
				return
			case !time.Unix(0, b.Expiry).After(env.Now()):
				m.Stats.Expired++
				done(env)
				return
			}
			m.spend(env.Now(), len(b.Data))
			ok := m.rt.Call(env, dst.Addr, s.v.Self(), dst.ID, b, 0, func(env node.Env, _ wire.Msg, err error) {
				if err != nil {
					m.Stats.Failed++
				} else {
					m.Stats.HandedOver++
					m.Stats.BytesHandedOver += m.weigh(len(b.Data))
				}
				done(env)
			})
			if !ok {
				m.Stats.Failed++
				done(env)
			}
		},
	})
}

// firstKey returns the first stored key in the ring arc (after, end], in
// ring order from after, or the zero ID if there is none.
func firstKey(e store.Engine, after, end id.ID) (id.ID, error) {
	root := merkle.Root()
	if after.Cmp(end) < 0 {
		keys, err := e.TreeKeys(root, after, end, 1)
		if err != nil || len(keys) == 0 {
			return id.ID{}, err
		}
		return keys[0], nil
	}
	// The arc wraps: first after the cursor up to the top, then from the
	// bottom up to the end.
	keys, err := e.TreeKeys(root, after, id.Max(after.Width()), 1)
	if err == nil && len(keys) == 0 {
		// (Min, end] leaves out the all-zero key alone.
		keys, err = e.TreeKeys(root, id.Min(after.Width()), end, 1)
	}
	if err != nil || len(keys) == 0 {
		return id.ID{}, err
	}
	return keys[0], nil
}
