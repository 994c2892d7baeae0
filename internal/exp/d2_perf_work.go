package exp

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"time"

	"triad/internal/d2"
	"triad/internal/d2/key"
	"triad/internal/d2/workload"
	"triad/internal/id"
)

// The perf experiment's workload (§9): each user's reads over one period
// of its trace, cut into access groups at think times over a second, as
// the paper replays 15-minute periods of the Harvard trace. Only reads are
// replayed: D2-FS writes back from a cache, so the paper measures reads.

// perfRead is one block a user reads.
type perfRead struct {
	Key   key.Key // D2's key; placePosition gives the others
	Bytes int32
}

// perfGroup is one access group: the reads between two think times, and
// the think time before it (before the first group: its offset into the
// period).
type perfGroup struct {
	Think time.Duration
	Reads []perfRead
}

// perfUser is one user's replay.
type perfUser struct {
	ID     int
	Groups []perfGroup
}

// perfWorkload is every user's replay and the keys of their volumes.
type perfWorkload struct {
	Users []perfUser
	// Volume is every block key of the users' volumes as the trace starts,
	// sorted: D2's positions are cut from it.
	Volume []key.Key
}

// Reads is the accesses of the whole replay.
func (w perfWorkload) Reads() int {
	n := 0
	for _, u := range w.Users {
		for _, g := range u.Groups {
			n += len(g.Reads)
		}
	}
	return n
}

// Groups is the access groups of the whole replay.
func (w perfWorkload) Groups() int {
	n := 0
	for _, u := range w.Users {
		n += len(u.Groups)
	}
	return n
}

// newPerfWorkload takes users' reads from the start of their first
// session over period, and groups at most maxGroups per user.
func newPerfWorkload(m *workload.Manifest, seed uint64, users int, period time.Duration, maxGroups int) perfWorkload {
	wc := workload.DefaultConfig()
	wc.Seed, wc.Users = seed, users
	var w perfWorkload
	for u := range users {
		us := workload.NewUser(m, wc, u)
		fs := us.FS()
		for i := range fs.Nodes {
			for b := range fs.Blocks(i) {
				w.Volume = append(w.Volume, fs.BlockKey(i, b))
			}
		}
		w.Users = append(w.Users, perfUserOf(us, u, period, maxGroups))
	}
	slices.SortFunc(w.Volume, func(a, b key.Key) int { return bytes.Compare(a[:], b[:]) })
	return w
}

// perfUserOf cuts one user's trace into access groups, as the paper does:
// a gap over a second between two accesses is think time.
func perfUserOf(us *workload.User, u int, period time.Duration, maxGroups int) perfUser {
	p := perfUser{ID: u}
	var start, last time.Duration
	first := true
	for a, ok := us.Next(); ok; a, ok = us.Next() {
		if first {
			start, last, first = a.At, a.At, false
		}
		if a.At-start >= period {
			break
		}
		if a.Op != workload.Read {
			continue
		}
		if n := len(p.Groups); n == 0 || a.At-last > workload.MaxGap {
			if n == maxGroups {
				break
			}
			p.Groups = append(p.Groups, perfGroup{Think: a.At - last})
		}
		g := &p.Groups[len(p.Groups)-1]
		g.Reads = append(g.Reads, perfRead{Key: a.Key, Bytes: a.Bytes})
		last = a.At
	}
	return p
}

// perfPositions are n positions for placement p: for d2, the volumes' keys
// cut at equal counts (where D2's balancing leaves nodes, §6: each node's
// range holds as many blocks); for block and file, seeded random
// positions (consistent hashing).
func perfPositions(p d2Placement, w perfWorkload, n int, seed uint64) []id.ID {
	out := make([]id.ID, n)
	if p != placeD2 {
		r := rand.New(rand.NewPCG(seed, 0x9e7f))
		for i := range out {
			out[i] = id.Random(r, d2.KeyBytes)
		}
		return out
	}
	for i := range out {
		out[i] = w.Volume[(i+1)*len(w.Volume)/n-1].ID()
	}
	return out
}
