package maint

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"slices"
	"time"

	"triad/internal/dhash/frag"
	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/merkle"
	"triad/internal/node"
	"triad/internal/rpc"
	"triad/internal/store"
	"triad/internal/wire"
)

// Audits. Synchronization trusts a partner's Merkle tree: a host that
// acknowledges stores and drops the bytes, but lists the keys in its tree,
// looks whole to its neighbours forever (issue 27: 100 acknowledged blocks
// left at one real copy). So every synchronization with a replica partner
// also challenges it for Config.Audits random keys of the arc both keep
// whole copies of: we send the key and a fresh nonce, it answers
// SHA-256(nonce ‖ its bytes), and we, holding the same bytes, check it.
// For a fragment, whose bytes differ between holders, we fetch the
// partner's fragment itself and check it against the descriptor the key
// names (frag.Check) instead.
//
// A partner fails an audit with a wrong proof or fragment, with "not held"
// for a key it still lacks a recheck period (2 intervals) after it first
// said so (an honest host fetches a key of its range in its next round;
// one whose tree claims the key never does), or by not answering twice at
// least Interval/2 apart with nothing answered between. A failed partner
// is a suspect for SuspectFor: maintenance takes it for no machine, so
// that its copies do not count. Its neighbours then repair around it: no
// round picks it as a partner, a vnode's range is walked back past it
// (replicaStart), so its successor keeps the keys it held as second copy
// and more, and its first honest successor hands the keys it held as
// first copy to the next honest one (a sweep's extra stretch). Suspicion
// is each host's own: with k = 2 the hosts that must act are the ones
// that audit; with more replicas, a member further on learns by its own
// audits.

// auditKey names a key a partner said it does not hold.
type auditKey struct {
	peer node.Addr
	key  id.ID
}

// Bounds of the audit state: cleared when full.
const (
	maxSuspects = 1024
	maxPending  = 4096
)

// suspectFor is how long a failed partner stays a suspect: six rounds.
func (m *Maint) suspectFor() time.Duration { return 6 * m.cfg.Interval }

// recheckAfter is how long a partner may lack a key of the arc it shares
// with us, its tree not listing it either, before it fails an audit for
// it: six rounds. An honest host lacking a key of its range fetches it at
// its next round, unless its repair budget holds it back (a host back
// from a disk failure may take hours to fill its range at 150 KiB/s); a
// host that drops what it stores fetches it again and again.
func (m *Maint) recheckAfter() time.Duration { return 6 * m.cfg.Interval }

// Suspect reports whether maintenance takes addr for no machine now.
func (m *Maint) Suspect(now time.Time, addr node.Addr) bool {
	until, ok := m.suspects[addr]
	return ok && now.Before(until)
}

// suspectsNow counts the suspects at now.
func (m *Maint) suspectsNow(now time.Time) uint64 {
	var n uint64
	for _, until := range m.suspects {
		if now.Before(until) {
			n++
		}
	}
	return n
}

// maxAuditsPerSync bounds Config.Audits.
const maxAuditsPerSync = 16

// suspect marks addr a suspect, and has each vnode sweep soon: a vnode
// whose predecessor it is hands that predecessor's first copies on.
func (m *Maint) suspect(env node.Env, addr node.Addr) {
	now := env.Now()
	if !m.Suspect(now, addr) {
		m.Stats.Suspects++
	}
	if m.suspects == nil || len(m.suspects) >= maxSuspects {
		m.suspects = make(map[node.Addr]time.Time)
	}
	m.suspects[addr] = now.Add(m.suspectFor())
	for _, st := range m.state {
		if st.sweep == nil {
			st.sweepDue = now
		}
	}
	m.neighboursChanged(env) // the plans change: rounds start once settled
}

// excluded is what rounds and plans leave out as partners: peers the ring
// thinks dead, and suspects.
func (m *Maint) excluded(env node.Env) func(wire.NodeRef) bool {
	now := env.Now()
	return func(p wire.NodeRef) bool { return m.chord.IsDead(env, p) || m.Suspect(now, p.Addr) }
}

// suspected is what ranges are walked past: suspects only.
func (m *Maint) suspected(now time.Time) func(wire.NodeRef) bool {
	return func(p wire.NodeRef) bool { return m.Suspect(now, p.Addr) }
}

// auditTarget is one audit: a partner and the arc (lo, hi] of keys both
// keep whole copies of.
type auditTarget struct {
	from, peer wire.NodeRef
	lo, hi     id.ID
}

// audit challenges t.peer for one key of t's arc we hold: a key it said
// it lacked a recheck period ago, or else the first after a random point.
func (m *Maint) audit(env node.Env, t auditTarget) {
	now := env.Now()
	var recheck id.ID
	for k, at := range m.pending {
		// The oldest due one would be fairer; any due one is as sound,
		// and the choice reaches no message order but this key's.
		if k.peer == t.peer.Addr && now.Sub(at) >= m.recheckAfter() && k.key.In(t.lo, t.hi) && (recheck.IsZero() || k.key.Cmp(recheck) < 0) {
			recheck = k.key
		}
	}
	start := id.RandomIn(env.Rand(), t.lo, t.hi)
	nonce := make([]byte, wire.AuditNonceBytes)
	for i := range nonce {
		nonce[i] = byte(env.Rand().Uint32())
	}
	// Keys expiring within the recheck period may be gone by the recheck.
	keepUntil := now.Add(m.recheckAfter() + m.cfg.Interval)
	type pick struct {
		key    id.ID
		proof  []byte
		opaque bool
	}
	env.Offload(&work{
		run: func(e store.Engine) (any, error) {
			key := recheck
			if key.IsZero() {
				k, err := firstKey(e, start, t.hi)
				if err == nil && k.IsZero() && start != t.lo {
					k, err = firstKey(e, t.lo, t.hi)
				}
				if err != nil || k.IsZero() {
					return pick{}, err
				}
				key = k
			}
			data, meta, err := e.Get(key)
			if err != nil || !meta.Expiry.IsZero() && meta.Expiry.Before(keepUntil) {
				return pick{}, nil // gone, damaged or expiring: no audit this time
			}
			if meta.Opaque {
				return pick{key: key, opaque: true}, nil
			}
			return pick{key: key, proof: proofOf(nonce, data)}, nil
		},
		done: func(env node.Env, res any, err error) {
			p, _ := res.(pick)
			if err != nil || p.key.IsZero() {
				if !recheck.IsZero() {
					delete(m.pending, auditKey{t.peer.Addr, recheck})
				}
				return
			}
			if p.opaque {
				m.auditFragment(env, t, p.key)
				return
			}
			m.Stats.Audits++
			ok := m.rt.Call(env, t.peer.Addr, t.from, t.peer.ID, &wire.Audit{Key: p.key, Nonce: nonce}, 0,
				func(env node.Env, msg wire.Msg, err error) {
					proof, isProof := msg.(*wire.AuditProof)
					switch {
					case err != nil || !isProof:
						m.noAnswer(env, t.peer, err)
					case !proof.Held:
						m.answered(t.peer)
						m.notHeld(env, t, p.key)
					case !bytes.Equal(proof.Hash, p.proof):
						m.answered(t.peer)
						m.failAudit(env, t.peer)
					default:
						m.answered(t.peer)
						delete(m.pending, auditKey{t.peer.Addr, p.key})
					}
				})
			if !ok {
				m.Stats.Audits-- // refused (too many in flight): not sent
			}
		},
	})
}

// auditFragment asks t.peer for its fragment of key and checks it against
// the descriptor key names: a fragment moves, so this runs only where
// our own copy is a fragment, at the same low rate.
func (m *Maint) auditFragment(env node.Env, t auditTarget, key id.ID) {
	m.Stats.Audits++
	ok := m.rt.Call(env, t.peer.Addr, t.from, t.peer.ID, &wire.FetchBlock{Key: key}, 0,
		func(env node.Env, msg wire.Msg, err error) {
			b, isBlock := msg.(*wire.Block)
			switch {
			case errors.Is(err, fault.ErrNotFound), errors.Is(err, fault.ErrCorrupt):
				m.answered(t.peer)
				m.notHeld(env, t, key)
			case err != nil || !isBlock:
				// Silent, busy or failing: as no answer, which fails only
				// if it lasts (an honest host under load is no suspect;
				// a host always busy is).
				m.noAnswer(env, t.peer, err)
			case b.Key != key || !b.Fragment:
				m.answered(t.peer)
				m.failAudit(env, t.peer)
			default:
				m.answered(t.peer)
				if _, err := frag.Check(key, b.Data); err != nil {
					m.failAudit(env, t.peer)
					return
				}
				delete(m.pending, auditKey{t.peer.Addr, key})
			}
		})
	if !ok {
		m.Stats.Audits--
	}
}

// proofOf is what a holder of data answers to nonce.
func proofOf(nonce, data []byte) []byte {
	h := sha256.New()
	h.Write(nonce)
	h.Write(data)
	return h.Sum(nil)
}

// notHeld handles a partner's "not held" for key. Its tree is asked
// whether it lists key (one query, at a prefix deep enough to hold key
// alone): a key its tree claims is challenged again a round on, and fails
// if it is still not held then (a lying TreeInfo). One it does not list is
// noted, and fails a recheck period on.
func (m *Maint) notHeld(env node.Env, t auditTarget, key id.ID) {
	one := id.Min(id.Bytes).AddPow2(0)
	q := &wire.TreeQuery{Prefix: merkle.PrefixOf(key.Bytes(), claimDepth).Encode(), Lo: key.Sub(one), Hi: key}
	ok := m.rt.Call(env, t.peer.Addr, t.from, t.peer.ID, q, 0, func(env node.Env, msg wire.Msg, err error) {
		info, isInfo := msg.(*wire.TreeInfo)
		switch {
		case err != nil || !isInfo:
			m.noAnswer(env, t.peer, err)
		case slices.Contains(info.Keys, key):
			m.answered(t.peer)
			m.claims(env, t.peer, key)
		default:
			m.answered(t.peer)
			m.lacks(env, t.peer, key)
		}
	})
	if !ok {
		m.lacks(env, t.peer, key)
	}
}

// claimDepth is the depth of the prefix notHeld asks about: 60 bits, far
// below any leaf, so the answer lists key alone if the tree holds it.
const claimDepth = 10

// lacks notes that peer lacks key and does not claim it; a recheck
// period after the first time, it fails.
func (m *Maint) lacks(env node.Env, peer wire.NodeRef, key id.ID) {
	k := auditKey{peer.Addr, key}
	at, ok := m.pending[k]
	switch {
	case !ok:
		if m.pending == nil {
			m.pending = make(map[auditKey]time.Time)
		}
		if len(m.pending) >= maxPending {
			return // full: the key is audited again later; the notes of other partners stay
		}
		m.pending[k] = env.Now()
	case env.Now().Sub(at) >= m.recheckAfter():
		delete(m.pending, k)
		m.failAudit(env, peer)
	}
}

// claims notes that peer's tree lists key, which it said it did not hold:
// challenged again a round on, it fails if it still does not hold it. Not
// at once: a block on its way to the partner (a repair) can be listed
// before it can be read, and an honest host would be suspected for it.
func (m *Maint) claims(env node.Env, peer wire.NodeRef, key id.ID) {
	k := auditKey{peer.Addr, key}
	if at, ok := m.pending[k]; ok && env.Now().Sub(at) >= m.recheckAfter() {
		delete(m.pending, k)
		m.failAudit(env, peer)
		return
	}
	if m.pending == nil {
		m.pending = make(map[auditKey]time.Time)
	}
	if len(m.pending) < maxPending {
		// Due for a recheck a round from now.
		m.pending[k] = env.Now().Add(m.cfg.Interval - m.recheckAfter())
	}
}

// noAnswer handles an audit the partner did not answer: it fails when an
// earlier one, at least Interval/2 before, went unanswered too.
func (m *Maint) noAnswer(env node.Env, peer wire.NodeRef, err error) {
	m.Stats.AuditsFailed++
	first, ok := m.silent[peer.Addr]
	switch {
	case !ok:
		if m.silent == nil || len(m.silent) >= maxSuspects {
			m.silent = make(map[node.Addr]time.Time)
		}
		m.silent[peer.Addr] = env.Now()
	case env.Now().Sub(first) >= m.cfg.Interval/2:
		delete(m.silent, peer.Addr)
		m.suspect(env, peer.Addr)
	}
}

func (m *Maint) answered(peer wire.NodeRef) { delete(m.silent, peer.Addr) }

func (m *Maint) failAudit(env node.Env, peer wire.NodeRef) {
	m.Stats.AuditsFailed++
	m.suspect(env, peer.Addr)
}

// answerAudit proves we hold the bytes of a key: read off the event loop.
func (m *Maint) answerAudit(env node.Env, in node.MsgIn, q *wire.Audit) {
	me := wire.NodeRef{Addr: m.rt.Addr()}
	env.Offload(&work{
		run: func(e store.Engine) (any, error) {
			data, _, err := e.Get(q.Key)
			switch {
			case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrCorrupt):
				return &wire.AuditProof{}, nil
			case err != nil:
				return nil, err
			}
			return &wire.AuditProof{Held: true, Hash: proofOf(q.Nonce, data)}, nil
		},
		done: func(env node.Env, res any, err error) {
			if err != nil {
				rpc.RespondError(env, in, me, fault.CodeInternal, err.Error())
				return
			}
			rpc.Respond(env, in, me, res.(*wire.AuditProof))
		},
	})
}
