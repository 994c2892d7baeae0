package maint

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"triad/internal/host"
	"triad/internal/id"
	"triad/internal/merkle"
	"triad/internal/node"
	"triad/internal/ring"
	"triad/internal/rpc"
	"triad/internal/store"
	"triad/internal/wire"
)

// Config sets local maintenance.
type Config struct {
	// Interval is the time between two rounds of one vnode. Default 10m.
	Interval time.Duration
	// SweepInterval is the time between two sweeps of global maintenance
	// by one vnode (the paper leaves it open). Zero: Interval.
	SweepInterval time.Duration
	// Settle is how long after a successor or predecessor changed a
	// vnode looks again, and starts a round if the change is still there:
	// a neighbour back within it (a clean restart) costs nothing. Default
	// 5s.
	Settle time.Duration
	// Replicas is k: a vnode keeps the keys in (k-th predecessor, itself].
	// Default 2.
	Replicas int
	// Queries and Fetches bound the tree queries and the fetches one
	// round has in flight. Default 8 each.
	Queries, Fetches int
	// Budget bounds the bytes per second the host's maintenance fetches
	// and hands over, across its vnodes (UsenetDHT's trace experiment
	// gives each host 150 KB/s); a second's worth may go at once. Zero:
	// no bound (the default, for a LAN).
	Budget int
	// Weight counts each byte a repair moves as Weight bytes, against the
	// budget and in the byte counters: the trace experiment stands small
	// objects in for UsenetDHT's 20 MB ones. Zero or one: as they are.
	Weight int
	// Fragments is l: an erasure-coded block's fragments are on its first
	// l successors, so a vnode also keeps the fragments of the keys in
	// (l-th predecessor, itself]. Rounds synchronize that wider range for
	// fragments only when Fragments > Replicas + 1 and Rebuild is set.
	Fragments int
	// Rebuild makes this host's fragment of key from m others (dhash's
	// RebuildFragment): done gets the fragment and its expiry, and the
	// bytes fetched to make it. Nil: missing fragments are counted, not
	// rebuilt.
	Rebuild func(env node.Env, key id.ID, done func(env node.Env, frag []byte, expiry time.Time, moved int, err error))
	// Audits is how many keys each synchronization with a replica partner
	// challenges it for (audit.go): it must prove it holds their bytes.
	// Default 2. Zero: none, neighbours' trees are trusted.
	Audits int
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{Interval: 10 * time.Minute, Settle: 5 * time.Second, Replicas: 2, Queries: 8, Fetches: 8, Audits: 2}
}

// Validate reports a config that cannot work.
func (c Config) Validate() error {
	switch {
	case c.Interval <= 0 || c.Settle <= 0 || c.SweepInterval < 0:
		return errors.New("maint: intervals must be positive")
	case c.Replicas < 1 || c.Replicas > wire.MaxListLen:
		return fmt.Errorf("maint: %d replicas not in [1, %d]", c.Replicas, wire.MaxListLen)
	case c.Fragments < 0 || c.Fragments > wire.MaxListLen:
		return fmt.Errorf("maint: %d fragments not in [0, %d]", c.Fragments, wire.MaxListLen)
	case c.Queries < 1 || c.Fetches < 1:
		return errors.New("maint: queries and fetches in flight must be at least 1")
	case c.Audits < 0 || c.Audits > maxAuditsPerSync:
		return fmt.Errorf("maint: %d audits per synchronization not in [0, %d]", c.Audits, maxAuditsPerSync)
	case c.Budget < 0 || c.Weight < 0:
		return errors.New("maint: the repair budget and weight must not be negative")
	}
	return nil
}

// Stats count what maintenance did; drivers export them.
type Stats struct {
	Rounds        uint64 // rounds finished
	Syncs         uint64 // neighbour synchronizations finished
	NodesCompared uint64 // tree nodes compared with a neighbour's
	KeysCompared  uint64 // keys listed by a neighbour's differing leaves
	Repaired      uint64 // objects fetched and stored
	BytesRepaired uint64
	Expired       uint64 // objects past their expiry when their turn came (not fetched or handed over) or when fetched (not stored)
	Extended      uint64 // copies of ours given the later expiry a neighbour listed for them
	Rebuilt       uint64 // fragments rebuilt from m others and stored
	Fragments     uint64 // missing fragments not rebuilt (no rebuilder, or too few holders answered)
	Failed        uint64 // queries, fetches and hand-overs that failed
	Unchanged     uint64 // synchronizations that stopped at the root: nothing changed since the last clean one

	// Audits (audit.go).
	Audits       uint64 // challenges sent to replica partners
	AuditsFailed uint64 // wrong proofs, keys still lacked a recheck period on, no answers
	Suspects     uint64 // times a partner was marked a suspect

	// Global maintenance.
	Sweeps          uint64 // sweeps finished
	Stretches       uint64 // stretches of keys placed with their successor
	HandedOver      uint64 // objects given to the successor that lacked them
	BytesHandedOver uint64
}

// Maint is local maintenance on one host.
type Maint struct {
	cfg     Config
	chord   *ring.Chord
	rt      *host.Host
	state   map[*ring.Vnode]*vnodeState
	listMax int  // the ring's predecessor-list length
	paused  bool // by the operator: no new rounds or sweeps
	// aside are keys rounds leave alone for a while (setAside): fragments
	// that could not be rebuilt, whole blocks a fragment arc met. Bounded:
	// cleared when full.
	aside map[id.ID]time.Time
	// The repair budget: a token bucket of bytes, refilled at Budget per
	// second up to a second's worth; work waits while it is empty.
	tokens    float64
	filled    time.Time
	waiting   []func(node.Env) // pumps to run when tokens come back
	resume    bool             // a budgetTimer is set
	transfers int              // in flight, under a budget: at most one
	// The check timer: when it fires (zero: none set), and its cancel.
	timerAt     time.Time
	cancelTimer func()
	checking    bool                  // in check: a round ending inside it does not recurse
	settleAt    time.Time             // a neighbour change starts rounds from then on
	clean       map[syncKey]syncRoots // the last clean synchronizations (syncMemo)
	// Audits: suspects until when, keys partners said they lacked and
	// when first, partners' first unanswered audit since their last answer.
	// Each bounded (audit.go).
	suspects map[node.Addr]time.Time
	pending  map[auditKey]time.Time
	silent   map[node.Addr]time.Time
	now      time.Time // the time of the last event maintenance saw (Status)
	Stats    Stats
}

// budgetTimer fires when the repair budget has tokens again.
type budgetTimer struct{}

func (budgetTimer) String() string { return "maint-budget" }

// spendable reports whether the budget lets another transfer start now,
// and if so counts it in flight until done. Under a budget one transfer
// runs at a time, so that the host never runs ahead of it by more than one
// object (a transfer's size is known only once it has come). A refused
// caller queues itself once with await.
func (m *Maint) spendable(env node.Env) bool {
	if m.cfg.Budget == 0 {
		return true
	}
	m.refill(env.Now())
	if m.tokens > 0 && m.transfers == 0 {
		m.transfers++
		return true
	}
	if m.transfers == 0 && !m.resume {
		m.resume = true
		wait := time.Duration((1 - m.tokens) / float64(m.cfg.Budget) * float64(time.Second))
		env.After(max(wait, time.Millisecond), budgetTimer{})
	}
	return false
}

// maxAside bounds Maint.aside.
const maxAside = 1 << 16

// setAside keeps rounds from fetching key again for setAsideFor: a
// fragment whose rebuild failed (fewer than m holders answered), or a
// whole block in a fragment arc, which is not ours to keep.
func (m *Maint) setAside(now time.Time, key id.ID) {
	if m.aside == nil || len(m.aside) >= maxAside {
		m.aside = make(map[id.ID]time.Time)
	}
	m.aside[key] = now
}

// skipped reports whether key was set aside less than setAsideFor ago.
func (m *Maint) skipped(now time.Time, key id.ID) bool {
	at, ok := m.aside[key]
	if ok && now.Sub(at) >= m.setAsideFor() {
		delete(m.aside, key)
		return false
	}
	return ok
}

// setAsideFor is six rounds' time.
func (m *Maint) setAsideFor() time.Duration { return 6 * m.cfg.Interval }

// await queues wake to run when the budget may let a transfer start: each
// round and sweep queues itself at most once, so the queue is as long as
// the rounds and sweeps waiting.
func (m *Maint) await(wake func(node.Env)) { m.waiting = append(m.waiting, wake) }

// done ends a transfer that spendable let start, and wakes what waits.
func (m *Maint) done(env node.Env) {
	if m.cfg.Budget == 0 {
		return
	}
	m.transfers--
	m.wake(env)
}

// wake runs what waits on the budget (each re-checks it).
func (m *Maint) wake(env node.Env) {
	waiting := m.waiting
	m.waiting = nil
	for _, w := range waiting {
		w(env)
	}
}

// spend takes n bytes from the budget (it may go below zero: a transfer's
// size is known only once it has come).
func (m *Maint) spend(now time.Time, n int) {
	if m.cfg.Budget == 0 {
		return
	}
	m.refill(now)
	m.tokens -= float64(m.weigh(n))
}

// weigh is what n bytes moved count for (Config.Weight).
func (m *Maint) weigh(n int) uint64 { return uint64(n) * uint64(max(1, m.cfg.Weight)) }

func (m *Maint) refill(now time.Time) {
	if !m.filled.IsZero() {
		m.tokens += now.Sub(m.filled).Seconds() * float64(m.cfg.Budget)
	}
	m.tokens = min(m.tokens, float64(m.cfg.Budget))
	m.filled = now
}

// vnodeState is one vnode's maintenance: the round in progress, and what
// the last one saw.
type vnodeState struct {
	round      *round
	succ, pred wire.NodeRef // the neighbours of the last round
	plan       []syncTask   // its synchronizations: partners and arcs
	due        time.Time    // the next periodic round
	sweep      *sweep       // global maintenance in progress
	sweepDue   time.Time
	sweepFrom  id.ID     // where the last sweep stopped short, if it did
	lastRound  time.Time // when the last round ended
}

// New registers local maintenance on the host that runs chord.
func New(cfg Config, chord *ring.Chord) (*Maint, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Maint{cfg: cfg, chord: chord, rt: chord.Runtime(), state: make(map[*ring.Vnode]*vnodeState), listMax: chord.Config().Preds}
	if err := m.rt.Register(wire.TypeTreeQuery, m); err != nil {
		return nil, err
	}
	return m, nil
}

// checkTimer fires when a vnode's next round or sweep is due.
type checkTimer struct{}

func (checkTimer) String() string { return "maint-check" }

// Start implements host.Protocol.
func (m *Maint) Start(env node.Env) {
	for _, v := range m.chord.Vnodes() {
		// The first round waits for the ring to settle: a neighbour change
		// starts it sooner.
		m.state[v] = &vnodeState{due: env.Now().Add(m.jitter(env, m.cfg.Interval)), sweepDue: env.Now().Add(m.jitter(env, m.sweepInterval()))}
	}
	// The ring tells when a predecessor the plan reads changes (range
	// starts up to p_l), besides the successor.
	m.chord.OnNeighbours(max(m.cfg.Replicas+1, m.cfg.Fragments), m.neighboursChanged)
	// A restarted host's lists start from the peers it saved, a few of
	// them: a round now could take a range far wider than its own. Its
	// first round waits until the ring has settled.
	m.neighboursChanged(env)
	m.check(env)
}

// Stop implements host.Protocol.
func (m *Maint) Stop(node.Env) {}

// PeerDown implements host.Protocol: a round with that neighbour fails on
// its own calls.
func (m *Maint) PeerDown(node.Env, node.Addr) {}

// Timer implements host.Protocol.
func (m *Maint) Timer(env node.Env, t node.Timer) bool {
	switch t.(type) {
	case budgetTimer:
		m.resume = false
		m.wake(env)
	case checkTimer:
		m.timerAt = time.Time{}
		m.check(env)
	default:
		return false
	}
	return true
}

// neighboursChanged runs when the ring changed a vnode's successor or
// predecessor: it looks again once the change has lasted cfg.Settle.
func (m *Maint) neighboursChanged(env node.Env) {
	m.settleAt = env.Now().Add(m.cfg.Settle)
	m.setTimer(env, m.settleAt)
}

// check starts the rounds and sweeps that are due, and a round at once on
// a vnode whose successor or predecessor changed since its last round;
// then it sets the timer for the next due one. The ring calls it when a
// neighbour changes, and rounds and sweeps when they end.
func (m *Maint) check(env node.Env) {
	if m.checking {
		return // a round that ended at once, inside this check
	}
	m.checking = true
	defer func() { m.checking = false }()
	now := env.Now()
	m.now = now
	var next time.Time
	for _, v := range m.chord.Vnodes() {
		st := m.state[v]
		if st == nil || m.paused {
			continue
		}
		if st.sweep == nil && !now.Before(st.sweepDue) {
			m.startSweep(env, v, st)
		}
		if st.round == nil {
			changed := false
			if !now.Before(m.settleAt) {
				changed = !samePlan(st.plan, m.plan(v, m.excluded(env), m.suspected(now)))
			}
			if changed || !now.Before(st.due) {
				m.startRound(env, v, st)
			}
		}
		if st.round == nil && (next.IsZero() || st.due.Before(next)) {
			next = st.due
		}
		if st.sweep == nil && (next.IsZero() || st.sweepDue.Before(next)) {
			next = st.sweepDue
		}
	}
	if now.Before(m.settleAt) && (next.IsZero() || m.settleAt.Before(next)) {
		next = m.settleAt
	}
	m.setTimer(env, next)
}

// setTimer makes the check timer fire at t, unless it fires sooner.
func (m *Maint) setTimer(env node.Env, t time.Time) {
	if t.IsZero() || !m.timerAt.IsZero() && !t.Before(m.timerAt) {
		return
	}
	if m.cancelTimer != nil {
		m.cancelTimer()
	}
	m.timerAt = t
	m.cancelTimer = env.After(max(t.Sub(env.Now()), time.Millisecond), checkTimer{})
}

func (m *Maint) sweepInterval() time.Duration {
	if m.cfg.SweepInterval > 0 {
		return m.cfg.SweepInterval
	}
	return m.cfg.Interval
}

func (m *Maint) jitter(env node.Env, d time.Duration) time.Duration {
	return d*3/4 + time.Duration(env.Rand().Int64N(int64(d)/2+1))
}

// Validate implements host.Validator.
func (m *Maint) Validate(msg wire.Msg) error {
	switch msg := msg.(type) {
	case *wire.TreeQuery:
		if _, err := merkle.DecodePrefix(msg.Prefix); err != nil {
			return err
		}
		if msg.Lo.Width() != id.Bytes || msg.Hi.Width() != id.Bytes {
			return errors.New("maint: tree query with a malformed range")
		}
	case *wire.Audit:
		if msg.Key.Width() != id.Bytes || len(msg.Nonce) != wire.AuditNonceBytes {
			return errors.New("maint: malformed audit")
		}
	case *wire.AuditProof:
		if msg.Held && len(msg.Hash) != wire.AuditHashBytes {
			return errors.New("maint: audit proof with a malformed hash")
		}
	case *wire.TreeInfo:
		if len(msg.Hash) != 0 && len(msg.Hash) != wire.TreeHashBytes {
			return errors.New("maint: tree node with a malformed hash")
		}
		if len(msg.Expiries) != 0 && len(msg.Expiries) != len(msg.Keys) {
			return errors.New("maint: tree node with expiry times that do not pair with its keys")
		}
		if len(msg.Sizes) != 0 && len(msg.Sizes) != len(msg.Keys) {
			return errors.New("maint: tree node with sizes that do not pair with its keys")
		}
	}
	return nil
}

// Receive implements host.Protocol: a neighbour's TreeQuery is answered
// from our tree, read off the event loop; an operator's status request and
// pause or resume at once.
func (m *Maint) Receive(env node.Env, in node.MsgIn) {
	if in.Env.Kind != wire.Request {
		return
	}
	m.now = env.Now()
	me := wire.NodeRef{Addr: m.rt.Addr()}
	switch msg := in.Env.Msg.(type) {
	case *wire.MaintStatusReq:
		// What the host stores is the engine's to say: read on the
		// driver's side, then answered with the counters.
		env.Offload(&work{
			run: func(e store.Engine) (any, error) { return e.Stats(), nil },
			done: func(env node.Env, res any, err error) {
				out := m.Status()
				if st, ok := res.(store.Stats); ok && err == nil {
					out.Counters = append(out.Counters, wire.Counter{Name: "stored_objects", Value: uint64(st.Objects)},
						wire.Counter{Name: "stored_bytes", Value: uint64(st.Usage)})
				}
				rpc.Respond(env, in, me, out)
			},
		})
		return
	case *wire.MaintControl:
		m.paused = msg.Pause
		rpc.Respond(env, in, me, &wire.Ack{})
		m.check(env)
		return
	}
	if a, ok := in.Env.Msg.(*wire.Audit); ok {
		m.answerAudit(env, in, a)
		return
	}
	q, ok := in.Env.Msg.(*wire.TreeQuery)
	if !ok {
		return
	}
	p, _ := merkle.DecodePrefix(q.Prefix) // Validate checked it
	env.Offload(&work{
		run: func(e store.Engine) (any, error) { return describe(e, p, q.Lo, q.Hi) },
		done: func(env node.Env, res any, err error) {
			if err != nil {
				rpc.RespondError(env, in, wire.NodeRef{Addr: m.rt.Addr()}, wire.ErrCodeInternal, err.Error())
				return
			}
			rpc.Respond(env, in, wire.NodeRef{Addr: m.rt.Addr()}, res.(*wire.TreeInfo))
		},
	})
}

// Status is the node's maintenance status, as `triad maint status` shows it.
func (m *Maint) Status() *wire.MaintStatus {
	s := m.Stats
	out := &wire.MaintStatus{Paused: m.paused, Counters: []wire.Counter{
		{Name: "rounds", Value: s.Rounds}, {Name: "syncs", Value: s.Syncs},
		{Name: "tree_nodes_compared", Value: s.NodesCompared}, {Name: "keys_compared", Value: s.KeysCompared},
		{Name: "objects_repaired", Value: s.Repaired}, {Name: "bytes_repaired", Value: s.BytesRepaired},
		{Name: "expired_not_repaired", Value: s.Expired}, {Name: "expiries_extended", Value: s.Extended}, {Name: "fragments_rebuilt", Value: s.Rebuilt}, {Name: "fragments_not_rebuilt", Value: s.Fragments},
		{Name: "failed", Value: s.Failed}, {Name: "syncs_unchanged", Value: s.Unchanged}, {Name: "sweeps", Value: s.Sweeps}, {Name: "stretches", Value: s.Stretches},
		{Name: "objects_handed_over", Value: s.HandedOver}, {Name: "bytes_handed_over", Value: s.BytesHandedOver},
		{Name: "audits_sent", Value: s.Audits}, {Name: "audits_failed", Value: s.AuditsFailed}, {Name: "suspects_marked", Value: s.Suspects},
		{Name: "suspects", Value: m.suspectsNow(m.now)},
	}}
	// What waits now: keys found missing and not yet fetched, and keys a
	// sweep has yet to hand over, with their sizes as far as known.
	var fetchKeys, fetchBytes, pushKeys, pushBytes uint64
	for _, v := range m.chord.Vnodes() {
		st := m.state[v]
		if st == nil {
			continue
		}
		mv := wire.MaintVnode{Self: v.Self(), Succ: st.succ, Pred: st.pred, Running: st.round != nil}
		if !st.lastRound.IsZero() {
			mv.LastRound = st.lastRound.UnixNano()
		}
		if st.round != nil {
			mv.Queued, mv.QueuedSize = uint64(st.round.fetch.len()), st.round.fetch.bytes
			fetchKeys += mv.Queued
			fetchBytes += mv.QueuedSize
		}
		if st.sweep != nil {
			pushKeys += uint64(st.sweep.push.len())
			pushBytes += st.sweep.push.bytes
		}
		out.Vnodes = append(out.Vnodes, mv)
	}
	out.Counters = append(out.Counters,
		wire.Counter{Name: "queued_fetches", Value: fetchKeys}, wire.Counter{Name: "queued_fetch_bytes", Value: fetchBytes},
		wire.Counter{Name: "queued_hand_overs", Value: pushKeys}, wire.Counter{Name: "queued_hand_over_bytes", Value: pushBytes})
	return out
}

// Work implements host.Protocol.
func (m *Maint) Work(env node.Env, done node.WorkDone) bool {
	w, ok := done.W.(*work)
	if !ok {
		return false
	}
	w.done(env, done.Result, done.Err)
	return true
}

// work is a read or write of the host's storage engine, run by the driver.
type work struct {
	run  func(store.Engine) (any, error)
	done func(env node.Env, res any, err error)
}

func (w *work) Run(s node.Storage) (any, error) { return w.run(s.Engine()) }

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

// A repairQueue holds the keys a synchronization has yet to fetch or hand
// over, latest expiry first (UsenetDHT §4: repairs queue, the objects
// that expire soonest last; keys of one expiry keep the order the walk
// found them in), and knows which are queued or in flight.
type repairQueue struct {
	keys   []id.ID
	expiry map[id.ID]int64 // queued or in flight: Unix nanoseconds, 0 unknown
	sizes  map[id.ID]uint64
	bytes  uint64 // the sizes of keys, as far as known
}

func (q *repairQueue) reset() {
	q.keys = q.keys[:0]
	q.expiry = make(map[id.ID]int64)
	q.sizes = make(map[id.ID]uint64)
	q.bytes = 0
}

// drop forgets what is queued (in flight stays known until finished).
func (q *repairQueue) drop() {
	for _, k := range q.keys {
		delete(q.expiry, k)
		delete(q.sizes, k)
	}
	q.keys = nil
	q.bytes = 0
}

func (q *repairQueue) len() int { return len(q.keys) }

// add queues the keys of d.missing that are not queued or in flight yet,
// and that skip, if set, does not rule out; it returns how many it added.
func (q *repairQueue) add(d diff, skip func(id.ID) bool) int {
	added := 0
	for i, k := range d.missing {
		if _, ok := q.expiry[k]; ok || skip != nil && skip(k) {
			continue
		}
		exp, size := at(d.expiry, i), at(d.size, i)
		q.sizes[k] = size
		q.bytes += size
		q.expiry[k] = exp
		at := sort.Search(len(q.keys), func(j int) bool { return q.expiry[q.keys[j]] < exp })
		q.keys = slices.Insert(q.keys, at, k)
		added++
	}
	return added
}

// take takes the key to fetch or hand over next; it stays known until
// finished. Keys whose expiry has passed by their turn are dropped on the
// way, unfetched, and counted in expired; false: none was left.
func (q *repairQueue) take(now time.Time, expired *uint64) (id.ID, bool) {
	for len(q.keys) > 0 {
		k := q.keys[0]
		q.keys = q.keys[1:]
		q.bytes -= q.sizes[k]
		if exp := q.expiry[k]; exp == 0 || exp > now.UnixNano() {
			return k, true
		}
		*expired++
		q.finished(k)
	}
	return id.ID{}, false
}

// listed is the expiry a neighbour listed for k, queued or in flight;
// zero when unknown.
func (q *repairQueue) listed(k id.ID) time.Time {
	if exp := q.expiry[k]; exp != 0 {
		return time.Unix(0, exp)
	}
	return time.Time{}
}

func (q *repairQueue) finished(k id.ID) {
	delete(q.expiry, k)
	delete(q.sizes, k)
}

// sameNode reports whether our node n and a neighbour's match.
func sameNode(n merkle.Node, count uint64, hash []byte) bool {
	return n.Count == count && (count == 0 || bytes.Equal(n.Hash[:], hash))
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
