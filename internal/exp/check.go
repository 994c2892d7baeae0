package exp

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"triad/internal/deploy"
	"triad/internal/dhash"
	"triad/internal/dhash/frag"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/ring"
	"triad/internal/sim"
	"triad/internal/wire"
)

// Checker is the simulator's invariant checker (`triad sim ... --check`).
// Experiments call it at the points where they claim an invariant holds;
// each failure is kept as a violation naming the invariant, the moment and
// the node or key.
//
// The invariants:
//   - ring: once the ring is stable, every running vnode's successor and
//     predecessor are the true ones; once it has also settled (long enough
//     for a change to travel a successor list's length and for dead-peer
//     marks to expire), every entry of every successor list is the true one;
//   - copies: every acknowledged put still has a durable copy on each host
//     that acknowledged one, whether that host is up or down, unless the
//     host's disk failed (sim.Wipe) since; a crash and restart keeps copies.
//     A copy counts only if it is what was acknowledged, kept at least
//     until the acknowledged expiry: for a whole block, bytes that hash to
//     the key; for a fragment, one whose header names the block (a
//     fragment is never a whole copy, nor a whole block a fragment);
//   - reads: every acknowledged key not yet at its acknowledged expiry
//     reads back through dhash, byte for byte, unless every host that
//     acknowledged it has lost its disk since (CheckReads);
//   - placement (Passing Tone): once the ring is stable, no key stays off
//     its replica set (k copies on its first k live successors) for longer
//     than two maintenance periods; the passingtone scenarios check it two
//     periods after each event.
//
// A Byzantine host (sim.Host.Lie set) is nobody's copy: its acknowledged
// copies are not checked, it is in no replica set (the set is the key's
// first k live honest successors), and a key acknowledged only by such
// hosts is not read back. Lost counts acknowledged keys with no honest
// copy left.
type Checker struct {
	// Succs is the successor-list length the ring is configured with: a
	// settled list holds that many, or every other vnode of a smaller ring.
	Succs      int
	acked      []ackedPut
	Checks     int
	Violations []string
}

type ackedPut struct {
	key       id.ID
	data      []byte
	expiry    time.Time
	fragments bool
	holders   []*sim.Host
	disks     []int // each holder's DiskFailures when the put was acknowledged
}

// maxViolations bounds what a checker keeps; further ones are only counted.
const maxViolations = 100

func (c *Checker) violate(format string, args ...any) {
	if c == nil {
		return
	}
	if len(c.Violations) < maxViolations {
		c.Violations = append(c.Violations, fmt.Sprintf(format, args...))
	}
}

// Checked is what the checker found, as experiment results carry it (empty
// without --check).
type Checked struct {
	Checks     int      `json:"checks,omitempty"`
	Violations *int     `json:"violations,omitempty"`
	Violated   []string `json:"violated,omitempty"`
}

// report is the checker's findings; a nil checker (no --check) has none.
func (c *Checker) report() Checked {
	if c == nil {
		return Checked{}
	}
	n := len(c.Violations)
	return Checked{Checks: c.Checks, Violations: &n, Violated: c.Violations}
}

// Acked records a put of data until expiry, acknowledged with a copy (a
// fragment, for red RedundancyFragments) on each of holders. The checker
// keeps data to read it back.
func (c *Checker) Acked(s *sim.Sim, key id.ID, data []byte, expiry time.Time, red wire.Redundancy, holders []wire.NodeRef) {
	if c == nil {
		return
	}
	p := ackedPut{key: key, data: data, expiry: expiry, fragments: red == wire.RedundancyFragments}
	for _, n := range holders {
		h := s.HostAt(n.Addr)
		if h == nil {
			c.violate("put %s acknowledged by unknown host %s", key.Short(), n.Addr)
			continue
		}
		p.holders = append(p.holders, h)
		p.disks = append(p.disks, h.DiskFailures)
	}
	c.acked = append(c.acked, p)
}

// CheckRing checks the ring invariant now with ring.Check; when says where
// the run is. settled says the ring has also settled, so whole successor
// lists (Succs long) are checked, not only the successor pointers.
func (c *Checker) CheckRing(s *sim.Sim, when string, settled bool) {
	if c == nil {
		return
	}
	c.Checks++
	want := ring.Want{Succs: 1, Preds: 1}
	if settled {
		want.Succs = c.Succs
	}
	for _, p := range ring.Check(views(s), want) {
		c.violate("%s: %s", when, p)
	}
}

// CheckCopies checks the copies invariant now.
func (c *Checker) CheckCopies(when string) {
	if c == nil {
		return
	}
	c.Checks++
	for _, p := range c.acked {
		for i, h := range p.holders {
			if h.DiskFailures != p.disks[i] || h.Lie != 0 {
				continue // the disk failed (or lies): this copy is maintenance's to restore
			}
			if err := p.copyOn(h); err != nil {
				c.violate("%s: acknowledged copy of %s missing on %s: %v", when, p.key.Short(), h.Addr, err)
			}
		}
	}
}

// copyOn returns why h holds no copy of p that counts (see Checker).
func (p *ackedPut) copyOn(h *sim.Host) error {
	data, meta, err := h.Storage().Engine().Get(p.key)
	switch {
	case err != nil:
		return err
	case meta.Expiry.Before(p.expiry):
		return fmt.Errorf("kept until %v, acknowledged until %v", meta.Expiry.UTC(), p.expiry.UTC())
	case p.fragments && !meta.Opaque:
		return errors.New("a whole copy where a fragment was acknowledged")
	case p.fragments:
		_, err := frag.Check(p.key, data)
		return err
	case meta.Opaque || id.Key(data) != p.key:
		return errors.New("not a whole copy of the block")
	}
	return nil
}

// CheckReads checks the reads invariant now: each acknowledged key still
// before its acknowledged expiry, and with an honest holder that kept its
// disk, is read through dhash from a random running honest host (32 at
// a time, for at most ten virtual minutes) and must come back as the bytes
// put.
func (c *Checker) CheckReads(s *sim.Sim, when string, pick func(n int) int) {
	if c == nil {
		return
	}
	c.Checks++
	// Reads go through honest hosts: what a Byzantine one answers its
	// client is its own business.
	var up []*sim.Host
	for _, h := range upHosts(s, len(s.Hosts())) {
		if h.Lie == 0 {
			up = append(up, h)
		}
	}
	if len(up) == 0 {
		return
	}
	now := s.Epoch().Add(s.Now())
	var queue []*ackedPut
	for i := range c.acked {
		p := &c.acked[i]
		kept := false
		for i, h := range p.holders {
			kept = kept || h.DiskFailures == p.disks[i] && h.Lie == 0
		}
		if kept && p.expiry.After(now) {
			queue = append(queue, p)
		}
	}
	outstanding := 0
	read := func(p *ackedPut) {
		red := wire.RedundancyReplicas
		if p.fragments {
			red = wire.RedundancyFragments
		}
		h := up[pick(len(up))]
		outstanding++
		s.Do(h, func(env node.Env) {
			deploy.Of(h).Blocks.Get(env, p.key, red, func(_ node.Env, b dhash.Block, err error) {
				s.Later(h, func() {
					outstanding--
					switch {
					case err != nil:
						c.violate("%s: acknowledged %s does not read back through %s: %v", when, p.key.Short(), h.Addr, err)
					case !bytes.Equal(b.Data, p.data):
						c.violate("%s: acknowledged %s reads back other bytes through %s", when, p.key.Short(), h.Addr)
					}
				})
			})
		})
	}
	// At most maxReads at a time: a burst of every key at once overflows
	// the simulated links' queues (tail drop), and a read that times out
	// on every holder is the network's doing, not a lost object.
	deadline := s.Now() + readsFor
	for (outstanding > 0 || len(queue) > 0) && s.Now() < deadline {
		for outstanding < maxReads && len(queue) > 0 {
			read(queue[0])
			queue = queue[1:]
		}
		s.RunFor(100 * time.Millisecond)
	}
	if outstanding > 0 || len(queue) > 0 {
		c.violate("%s: %d reads of acknowledged keys still running or not started after %v", when, outstanding+len(queue), readsFor)
	}
}

// Bounds of CheckReads.
const (
	maxReads = 32
	readsFor = 10 * time.Minute
)

// CheckPlacement checks the placement invariant now for keys, k copies.
func (c *Checker) CheckPlacement(s *sim.Sim, when string, keys []id.ID, k int) {
	if c == nil {
		return
	}
	c.Checks++
	for _, key := range underPlaced(s, keys, k) {
		c.violate("%s: %s has fewer than %d copies on its replica set", when, key.Short(), k)
	}
}

// underPlaced lists the keys with fewer than k copies on their replica
// set (see replicaSets).
func underPlaced(s *sim.Sim, keys []id.ID, k int) []id.ID {
	set := replicaSets(s, k)
	var out []id.ID
	for _, key := range keys {
		n := 0
		for _, h := range set(key) {
			if has(s, h, key) {
				n++
			}
		}
		if n < k {
			out = append(out, key)
		}
	}
	return out
}

// replicaSets returns a function giving a key's replica set on the ring
// as it runs now: the hosts of its first k live successors (one vnode per
// host).
func replicaSets(s *sim.Sim, k int) func(key id.ID) []*sim.Host {
	o := newOracle(s)
	hostOf := make(map[id.ID]*sim.Host)
	for _, h := range s.Hosts() {
		if h.Up() {
			for _, v := range chordOf(h).Vnodes() {
				hostOf[v.Self().ID] = h
			}
		}
	}
	return func(key id.ID) []*sim.Host {
		var out []*sim.Host
		x := o.successor(key)
		for i := 0; len(out) < k && i < len(o.ids); i++ {
			if h := hostOf[x]; h.Lie == 0 {
				out = append(out, h)
			}
			x = o.successor(x.AddPow2(0))
		}
		return out
	}
}

// has reports whether h holds a whole copy of key: bytes that hash to it
// (a fragment is no whole copy), not yet expired.
func has(s *sim.Sim, h *sim.Host, key id.ID) bool {
	data, meta, err := h.Storage().Engine().Get(key)
	return err == nil && !meta.Opaque && id.Key(data) == key && meta.Expiry.After(s.Epoch().Add(s.Now()))
}

// Lost lists the acknowledged keys, not yet at their acknowledged expiry,
// of which no honest host (up or down) holds a copy that counts.
func (c *Checker) Lost(s *sim.Sim) []id.ID {
	if c == nil {
		return nil
	}
	now := s.Epoch().Add(s.Now())
	var out []id.ID
	for _, p := range c.acked {
		if !p.expiry.After(now) {
			continue
		}
		found := false
		for _, h := range s.Hosts() {
			if h.Lie == 0 && p.copyOn(h) == nil {
				found = true
				break
			}
		}
		if !found {
			out = append(out, p.key)
		}
	}
	return out
}
