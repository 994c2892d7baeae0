package dhash

import (
	"fmt"
	"slices"
	"time"

	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/wire"
)

// A holder's engine quarantines a copy that fails its checks on a read and
// answers fault.ErrCorrupt; nothing would recreate it before maintenance
// (Passing Tone) compares the holders. So a get that has the block stores a
// good copy back at each host that found its copy damaged: the block
// itself for replicas, for fragments a fragment rebuilt under an index no
// other holder has. The engine takes it, since the damaged copy has left
// its index. Stats.Repaired and RepairsFailed count the outcomes.

// repair stores good copies of b, the block g fetched and verified, at the
// hosts that found theirs damaged.
func (g *getOp) repair(env node.Env, b Block) {
	if !b.Expiry.After(env.Now()) {
		return // an engine takes no copy that has expired
	}
	if !g.fragment {
		for _, c := range g.damaged {
			g.n.restore(env, c, &wire.StoreBlock{Key: g.key, Data: b.Data, Expiry: b.Expiry.UnixNano()})
		}
		return
	}
	g.surveyFragments(env, b, func(env node.Env, r *fragRepair, missing []int) { r.storeMissing(env, missing) })
}

// surveyFragments starts a fragRepair for b, the block g rebuilt from
// fragments: the holders the get did not ask may hold indices it has not
// seen, so they are asked, and then is called with the indices no holder
// has.
func (g *getOp) surveyFragments(env node.Env, b Block, then func(env node.Env, r *fragRepair, missing []int)) {
	r := &fragRepair{n: g.n, key: g.key, data: b.Data, expiry: b.Expiry, damaged: g.damaged,
		held: make([]bool, g.n.cfg.TotalFrags), then: then}
	for _, f := range g.frags {
		r.held[f.Index] = true
	}
	r.holders = slices.Clone(g.fragFrom)
	var survey []wire.NodeRef
	for _, c := range g.looked[:min(len(g.looked), g.n.cfg.TotalFrags)] {
		if !slices.ContainsFunc(g.asked, func(a wire.NodeRef) bool { return a.Addr == c.Addr }) {
			survey = append(survey, c)
		}
	}
	r.survey(env, survey)
}

// fragRepair finds the fragment indices a block's holders lack; then
// places them (at the hosts whose copy was damaged, or at the host
// rebuilding its own fragment).
type fragRepair struct {
	n       *Node
	key     id.ID
	data    []byte
	expiry  time.Time
	damaged []wire.NodeRef
	held    []bool      // by fragment index
	holders []node.Addr // the hosts known to hold a fragment
	waiting int         // survey fetches not answered yet
	moved   int         // bytes the survey fetched
	then    func(env node.Env, r *fragRepair, missing []int)
}

// survey fetches the fragments of hosts, noting their indices, then places
// the missing ones.
func (r *fragRepair) survey(env node.Env, hosts []wire.NodeRef) {
	r.waiting = len(hosts) + 1 // + 1 until every fetch is sent
	for _, c := range hosts {
		ok := r.n.fetchFrom(env, c, r.key, func(env node.Env, b *wire.Block, err error) {
			if err == nil {
				r.moved += len(b.Data)
			}
			if err == nil && b.Fragment {
				if f, err := r.n.coder.check(r.key, b.Data, r.n.cfg.MaxBlock); err == nil {
					r.held[f.Index] = true
					r.holders = append(r.holders, c.Addr)
				}
			}
			r.answered(env)
		})
		if !ok {
			r.waiting--
		}
	}
	r.answered(env)
}

func (r *fragRepair) answered(env node.Env) {
	if r.waiting--; r.waiting > 0 {
		return
	}
	var missing []int
	for i, held := range r.held {
		if !held {
			missing = append(missing, i)
		}
	}
	r.then(env, r, missing)
}

// storeMissing stores rebuilt fragments of the missing indices at the
// hosts whose copy was damaged.
func (r *fragRepair) storeMissing(env node.Env, missing []int) {
	// Past the missing indices, a damaged copy was a spare: every index is
	// held elsewhere.
	targets := r.damaged[:min(len(r.damaged), len(missing))]
	if len(targets) == 0 {
		return
	}
	key, data := r.key, r.data
	r.n.offload(env, func() (any, error) {
		return r.n.resplit(key, data)
	}, func(env node.Env, val any, err error) {
		if err != nil {
			r.n.Stats.RepairsFailed += uint64(len(targets))
			return
		}
		frags := val.([][]byte)
		for i, c := range targets {
			r.n.restore(env, c, &wire.StoreBlock{Key: key, Data: frags[missing[i]], Expiry: r.expiry.UnixNano(), Fragment: true})
		}
	})
}

// restore stores m at c in place of c's damaged copy and counts the outcome.
func (n *Node) restore(env node.Env, c wire.NodeRef, m *wire.StoreBlock) {
	ok := n.storeAt(env, c, m, false, uplinkTime(len(m.Data)), func(env node.Env, err error) {
		if err != nil {
			n.Stats.RepairsFailed++
			n.ring.CallFailed(env, c, err)
			return
		}
		n.Stats.Repaired++
	})
	if !ok {
		n.Stats.RepairsFailed++
	}
}

// resplit codes data, the block a get rebuilt for key, into its fragments
// again. They are the fragments put under key unless the putter's were not
// this coding of the block (its descriptor lists other shard hashes): then
// none of them would verify, and it fails.
func (n *Node) resplit(key id.ID, data []byte) ([][]byte, error) {
	k, frags, err := n.coder.split(data)
	if err == nil && k != key {
		err = fmt.Errorf("%w: the fragments under %s are not a coding of their block", fault.ErrCorrupt, key.Short())
	}
	return frags, err
}

// RebuildFragment makes a fragment of key's block for this host, which is
// among the key's first l successors and lacks one (Passing Tone: a missing
// fragment is rebuilt from any m others). It gets the block from m
// fragments (verified against the key), asks the other holders which
// indices they hold, and calls done with a fragment of an index none holds,
// and the bytes fetched on the way. It stores nothing: the caller keeps the
// fragment in its own engine. When several hosts lack fragments of one
// block, each takes the missing index at its rank among the successors
// that hold none, so that hosts seeing the same holders pick different
// indices. fault.ErrNotFound: every index is held already.
func (n *Node) RebuildFragment(env node.Env, key id.ID, done func(env node.Env, frag []byte, expiry time.Time, moved int, err error)) {
	n.Stats.Gets++
	g := &getOp{n: n, key: key, fragment: true}
	g.done = func(env node.Env, b Block, err error) {
		if err != nil {
			done(env, nil, time.Time{}, 0, err)
			return
		}
		fetched := 0
		for _, f := range g.frags {
			fetched += len(f.Shard) + n.coder.header()
		}
		g.surveyFragments(env, b, func(env node.Env, r *fragRepair, missing []int) {
			fetched += r.moved
			self := n.rt.Addr()
			rank := 0
			for _, c := range g.looked[:min(len(g.looked), n.cfg.TotalFrags)] {
				if c.Addr == self {
					break
				}
				if !slices.Contains(r.holders, c.Addr) {
					rank++
				}
			}
			if len(missing) == 0 || !b.Expiry.After(env.Now()) {
				done(env, nil, time.Time{}, fetched, fmt.Errorf("%w: every fragment index of %s is held", fault.ErrNotFound, key.Short()))
				return
			}
			index, data := missing[rank%len(missing)], b.Data
			n.offload(env, func() (any, error) {
				return n.resplit(key, data)
			}, func(env node.Env, val any, err error) {
				if err != nil {
					done(env, nil, time.Time{}, fetched, err)
					return
				}
				done(env, val.([][]byte)[index], b.Expiry, fetched, nil)
			})
		})
	}
	n.candidates(env, key, n.cfg.TotalFrags, g.start)
}
