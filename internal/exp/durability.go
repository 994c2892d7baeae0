package exp

import (
	"math/rand/v2"
	"slices"
	"time"

	"triad/internal/deploy"
	"triad/internal/dhash"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/sim"
	"triad/internal/wire"
)

// Durability is what the crash phase of `triad sim dhash` found: every
// holder of some keys crashes at once and restarts (a transient failure,
// which keeps disks), and every holder of a few other keys loses its disk
// (sim.Wipe). Lost counts acknowledged keys of the first kind that no
// longer read back, and must be 0; WipedLost counts keys of the second
// kind that are gone, and shows the simulator tells the two apart. With no
// maintenance yet nearly every such key is gone; one may survive in a copy
// a put placed past a slow holder, which a get's second look-up finds.
type Durability struct {
	CrashKeys    int `json:"crash_restart_keys"`
	CrashedHosts int `json:"crashed_hosts"`
	Lost         int `json:"lost"`
	WipedKeys    int `json:"wiped_keys"`
	WipedHosts   int `json:"wiped_hosts"`
	WipedLost    int `json:"wiped_lost"`
}

// The crash phase's most keys; smaller rings use fewer.
const (
	durabilityCrashKeys = 10
	durabilityWipeKeys  = 3
	durabilityDowntime  = time.Minute
)

// settleLists is long enough, with the default intervals, for dead-peer
// marks (30 s) to expire and for a change to travel a successor list.
const settleLists = time.Minute

// measureDurability runs the crash phase on a stable ring.
func measureDurability(s *sim.Sim, r *rand.Rand, cfg DHashConfig, chk *Checker) Durability {
	var d Durability
	up := upHosts(s, len(s.Hosts()))
	// At most a quarter of the hosts go down at once (2 per key).
	crashKeys := min(durabilityCrashKeys, max(1, len(up)/10))
	wipeKeys := min(durabilityWipeKeys, max(1, len(up)/40))
	// The acknowledged puts, in the order they were acknowledged.
	puts := slices.DeleteFunc(putBlocks(s, r, 3*(crashKeys+wipeKeys), cfg.BlockSize, wire.RedundancyReplicas, chk), func(p put) bool { return p.key.IsZero() })
	slices.SortFunc(puts, func(a, b put) int { return a.acked - b.acked })
	var keys []ackedKey
	for _, p := range puts {
		a := ackedKey{key: p.key}
		for _, n := range p.holders {
			a.holders = append(a.holders, s.HostAt(n.Addr))
		}
		keys = append(keys, a)
	}
	chk.CheckCopies("after the crash phase's puts")

	crashed, wiped := disjointKeys(keys, crashKeys, wipeKeys)
	d.CrashKeys, d.WipedKeys = len(crashed), len(wiped)
	var down []*sim.Host
	for _, k := range crashed {
		for _, h := range k.holders {
			s.Crash(h)
			down = append(down, h)
			d.CrashedHosts++
		}
	}
	for _, k := range wiped {
		for _, h := range k.holders {
			s.Wipe(h)
			down = append(down, h)
			d.WipedHosts++
		}
	}
	s.RunFor(durabilityDowntime)
	chk.CheckCopies("with every holder of the crashed keys down")
	for _, h := range down {
		if err := s.Restart(h); err != nil {
			d.Lost = -1 // cannot happen with the simulator's own storage
		}
	}
	if err := waitStable(s, 10*time.Minute); err != nil {
		chk.violate("ring not stable after the crash phase: %v", err)
	}
	chk.CheckRing(s, "stable after the crash phase", false)
	s.RunFor(30 * time.Second)
	chk.CheckCopies("after the crash phase")

	for _, k := range crashed {
		if !readable(s, r, k.key) {
			d.Lost++
		}
	}
	for _, k := range wiped {
		if !readable(s, r, k.key) {
			d.WipedLost++
		}
	}
	s.RunFor(settleLists)
	chk.CheckRing(s, "settled after the crash phase", true)
	chk.CheckReads(s, "after the crash phase", r.IntN)
	return d
}

// ackedKey is a key whose put was acknowledged, and the hosts that held
// it then.
type ackedKey struct {
	key     id.ID
	holders []*sim.Host
}

// disjointKeys picks keys whose holders do not overlap, in keys' order:
// up to crashKeys to crash first, then up to wipeKeys to wipe.
func disjointKeys(keys []ackedKey, crashKeys, wipeKeys int) (crashed, wiped []ackedKey) {
	used := map[*sim.Host]bool{}
	for _, k := range keys {
		if slices.ContainsFunc(k.holders, func(h *sim.Host) bool { return used[h] }) {
			continue
		}
		switch {
		case len(crashed) < crashKeys:
			crashed = append(crashed, k)
		case len(wiped) < wipeKeys:
			wiped = append(wiped, k)
		default:
			continue
		}
		for _, h := range k.holders {
			used[h] = true
		}
	}
	return crashed, wiped
}

// readable gets key through a random host up and reports whether it came
// back within two virtual minutes.
func readable(s *sim.Sim, r *rand.Rand, key id.ID) bool {
	var ok, done bool
	clients := upHosts(s, len(s.Hosts()))
	h := clients[r.IntN(len(clients))]
	s.Do(h, func(env node.Env) {
		deploy.Of(h).Blocks.Get(env, key, wire.RedundancyReplicas, func(_ node.Env, _ dhash.Block, err error) {
			ok, done = err == nil, true
		})
	})
	for deadline := s.Now() + 2*time.Minute; !done && s.Now() < deadline; {
		s.RunFor(100 * time.Millisecond)
	}
	return ok
}
