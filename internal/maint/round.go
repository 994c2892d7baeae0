package maint

import (
	"errors"
	"time"

	"triad/internal/id"
	"triad/internal/merkle"
	"triad/internal/node"
	"triad/internal/ring"
	"triad/internal/rpc"
	"triad/internal/store"
	"triad/internal/wire"
)

// round is one vnode's local maintenance (Figure 2): a synchronization of
// its range with its successor, then with its predecessor, fetching what
// it lacks from each.
type round struct {
	m        *Maint
	v        *ring.Vnode
	st       *vnodeState
	syncs    []syncTask // successor, predecessor; then the fragment arcs
	cur      int        // the synchronization under way
	visit    []merkle.Prefix
	fetch    repairQueue
	queries  int       // in flight, with their comparisons
	fetches  int       // in flight, with their writes
	waiting  bool      // queued on the repair budget
	asked    int       // tree queries to the current partner
	sync     *syncMemo // the current partner's synchronization
	dirty    bool      // it found something missing, or failed
	finished bool
}

// maxQueriesPerSync bounds the tree queries one synchronization makes, so
// that a neighbour claiming differences without end cannot keep a round
// going: 65,536 queries walk about four million differing keys.
const maxQueriesPerSync = 1 << 16

// maxQueued bounds the keys a round holds to fetch: past it, it stops
// walking the tree until fetches drain the queue.
const maxQueued = 4096

func (m *Maint) startRound(env node.Env, v *ring.Vnode, st *vnodeState) {
	succ, pred := v.Successor(), v.Predecessor()
	st.succ, st.pred = succ, pred
	st.due = env.Now().Add(m.jitter(env, m.cfg.Interval))
	r := &round{m: m, v: v, st: st}
	r.syncs = m.plan(v, m.excluded(env), m.suspected(env.Now()))
	st.plan = r.syncs
	st.round = r
	// Audits run beside the synchronizations, a few per partner: the
	// partner's tree is not taken on trust (audit.go).
	for _, t := range r.syncs {
		if t.audit {
			for range m.cfg.Audits {
				m.audit(env, auditTarget{from: v.Self(), peer: t.peer, lo: t.auditLo, hi: t.auditHi})
			}
		}
	}
	r.begin(env)
}

// begin starts the synchronization with the current partner, or ends the
// round when none is left.
func (r *round) begin(env node.Env) {
	if r.cur == len(r.syncs) {
		r.finished = true
		r.m.Stats.Rounds++
		if r.st.round == r {
			r.st.round = nil
		}
		r.st.lastRound = env.Now()
		r.m.check(env)
		return
	}
	r.visit = append(r.visit[:0], merkle.Root())
	r.fetch.reset()
	r.asked = 0
	t := r.syncs[r.cur]
	r.sync = &syncMemo{key: syncKey{peer: t.peer.ID, lo: t.lo, hi: t.hi}}
	r.dirty = false
	r.pump(env)
}

// giveUp drops what is left to do with the current partner (it is dead, or
// stopped answering): what is in flight ends by itself.
func (r *round) giveUp() {
	r.visit = nil
	r.fetch.drop()
	r.dirty = true
}

// pump starts what the limits allow and moves on when the partner is done.
func (r *round) pump(env node.Env) {
	if r.finished {
		return // a wake-up or a continuation after the round ended
	}
	if r.m.chord.IsDead(env, r.partner()) {
		r.giveUp()
	}
	for r.fetches < r.m.cfg.Fetches && r.fetch.len() > 0 {
		if !r.m.spendable(env) {
			if !r.waiting {
				r.waiting = true
				r.m.await(func(env node.Env) {
					r.waiting = false
					r.pump(env)
				})
			}
			return // the budget wakes this round again
		}
		key, ok := r.fetch.take(env.Now(), &r.m.Stats.Expired)
		if !ok {
			r.m.done(env) // every key left had expired: give the transfer back
			break
		}
		r.fetchKey(env, key)
	}
	for r.queries < r.m.cfg.Queries && len(r.visit) > 0 && r.fetch.len() < maxQueued {
		if r.asked == maxQueriesPerSync {
			r.m.Stats.Failed++
			r.dirty = true
			r.visit = nil // the rest of the walk waits for the next round
			break
		}
		r.asked++
		p := r.visit[len(r.visit)-1]
		r.visit = r.visit[:len(r.visit)-1]
		r.query(env, p)
	}
	if r.queries == 0 && r.fetches == 0 && len(r.visit) == 0 && r.fetch.len() == 0 {
		r.m.Stats.Syncs++
		r.m.syncEnded(r.sync, !r.dirty)
		r.cur++
		r.begin(env)
	}
}

func (r *round) partner() wire.NodeRef { return r.syncs[r.cur].peer }

// query compares our tree's node at p with the partner's.
func (r *round) query(env node.Env, p merkle.Prefix) {
	m := r.m
	r.queries++
	var sync *syncMemo
	if p == merkle.Root() {
		sync = r.sync
	}
	t := r.syncs[r.cur]
	ok := m.askTree(env, r.v.Self(), t.peer, p, t.lo, t.hi, compare, sync, func(env node.Env, d diff, err error) {
		r.queries--
		if err != nil {
			r.dirty = true
			m.Stats.Failed++
			if errors.Is(err, rpc.ErrTimeout) {
				r.giveUp()
			}
		} else {
			// Keys set aside (fragments that could not be rebuilt, whole
			// blocks in a fragment arc) do not keep the sync from counting
			// as clean.
			if r.fetch.add(d, func(k id.ID) bool { return m.skipped(env.Now(), k) }) > 0 {
				r.dirty = true
			}
			m.extend(env, d.extend)
			r.visit = append(r.visit, d.descend...)
		}
		r.pump(env)
	})
	if !ok {
		m.Stats.Failed++
		r.dirty = true
		r.queries--
	}
}

// fetchKey copies one object we lack from the partner; a fragment is
// rebuilt instead (another index is needed). In a fragment arc, where
// whole blocks are not ours to keep, the partner is asked what it holds
// first.
func (r *round) fetchKey(env node.Env, key id.ID) {
	m, partner := r.m, r.partner()
	r.fetches++
	done := func(env node.Env) {
		r.fetches--
		r.fetch.finished(key)
		r.pump(env)
		m.done(env)
	}
	if r.syncs[r.cur].fragments {
		ok := m.rt.Call(env, partner.Addr, r.v.Self(), partner.ID, &wire.StatBlock{Key: key}, 0,
			func(env node.Env, msg wire.Msg, err error) {
				info, isInfo := msg.(*wire.BlockInfo)
				switch {
				case err != nil || !isInfo:
					m.Stats.Failed++
					if errors.Is(err, rpc.ErrTimeout) {
						r.giveUp()
					}
					done(env)
				case !info.Fragment:
					m.setAside(env.Now(), key) // a whole copy: not ours to keep
					done(env)
				default:
					m.rebuild(env, key, r.fetch.listed(key), done)
				}
			})
		if !ok {
			m.Stats.Failed++
			r.fetches--
			r.fetch.finished(key)
			m.done(env)
		}
		return
	}
	ok := m.rt.Call(env, partner.Addr, r.v.Self(), partner.ID, &wire.FetchBlock{Key: key}, 0,
		func(env node.Env, msg wire.Msg, err error) {
			b, isBlock := msg.(*wire.Block)
			if isBlock {
				m.spend(env.Now(), len(b.Data))
			}
			switch {
			case err != nil || !isBlock || b.Key != key:
				m.Stats.Failed++
				if errors.Is(err, rpc.ErrTimeout) {
					r.giveUp()
				}
				done(env)
				return
			case b.Fragment:
				m.rebuild(env, key, r.fetch.listed(key), done)
				return
			}
			expiry := time.Unix(0, b.Expiry)
			if !expiry.After(env.Now()) {
				m.Stats.Expired++
				done(env)
				return
			}
			env.Offload(&work{
				// The engine checks the content hash: a neighbour cannot
				// store anything but the object under its key.
				run: func(e store.Engine) (any, error) {
					return nil, e.Put(key, b.Data, expiry, store.PutOptions{NoWait: m.cfg.NoWait})
				},
				done: func(env node.Env, _ any, err error) {
					if errors.Is(err, store.ErrFull) {
						r.giveUp() // no room: the rest would not fit either
					}
					if err != nil {
						m.Stats.Failed++
					} else {
						m.Stats.Repaired++
						m.Stats.BytesRepaired += m.weigh(len(b.Data))
					}
					done(env)
				},
			})
		})
	if !ok {
		m.Stats.Failed++
		r.fetches--
		r.fetch.finished(key)
		m.done(env)
	}
}

// rebuild makes our fragment of key from m others (Config.Rebuild) and
// stores it; then done. Without a rebuilder, or when the rebuild fails,
// the key is set aside for a while.
//
// The fragment keeps the later of the rebuilt block's expiry and listed,
// the expiry the partner listed for key: holders whose copies a re-put
// missed must not shorten it.
func (m *Maint) rebuild(env node.Env, key id.ID, listed time.Time, done func(node.Env)) {
	if m.cfg.Rebuild == nil {
		m.Stats.Fragments++
		m.setAside(env.Now(), key)
		done(env)
		return
	}
	m.cfg.Rebuild(env, key, func(env node.Env, frag []byte, expiry time.Time, moved int, err error) {
		m.spend(env.Now(), moved)
		if listed.After(expiry) {
			expiry = listed
		}
		if err != nil {
			m.Stats.Fragments++
			m.setAside(env.Now(), key)
			done(env)
			return
		}
		env.Offload(&work{
			run: func(e store.Engine) (any, error) {
				return nil, e.Put(key, frag, expiry, store.PutOptions{Opaque: true, NoWait: m.cfg.NoWait})
			},
			done: func(env node.Env, _ any, err error) {
				if err != nil {
					m.Stats.Failed++
					m.setAside(env.Now(), key)
				} else {
					m.Stats.Rebuilt++
					m.Stats.BytesRepaired += m.weigh(moved)
				}
				done(env)
			},
		})
	})
}

// extend gives copies of ours the later expiry a partner listed for them:
// each is read and put again, which only extends it (store.Engine.Put).
// The bytes are our own, so nothing crosses the network.
func (m *Maint) extend(env node.Env, ext []extension) {
	if len(ext) == 0 {
		return
	}
	env.Offload(&work{
		run: func(e store.Engine) (any, error) {
			n := 0
			for _, x := range ext {
				data, meta, err := e.Get(x.key)
				if err != nil {
					continue // gone or damaged since: the next round sees it missing
				}
				if err := e.Put(x.key, data, x.expiry, store.PutOptions{Opaque: meta.Opaque, KeyChecked: true, NoWait: m.cfg.NoWait}); err != nil {
					return n, err
				}
				n++
			}
			return n, nil
		},
		done: func(env node.Env, res any, err error) {
			n, _ := res.(int)
			m.Stats.Extended += uint64(n)
			if err != nil {
				m.Stats.Failed++
			}
		},
	})
}
