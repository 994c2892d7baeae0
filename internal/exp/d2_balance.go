package exp

import "time"

// The balancing of the d2 simulator: a model of D2's (§6), not the node
// code in internal/d2.

// probeAll is one probe interval: first every host whose pointers are
// older than the stabilization time fetches their blocks; then every live
// host, in a random order, samples a random live host, and if one's load
// is over t times the other's the lighter moves to split the heavier: the
// probe works both ways, as in Karger and Ruhl's algorithm that D2 cites
// for its details ([19]; §6 describes the light prober's side).
func (s *d2Sim) probeAll() {
	for h := range s.ring.hosts {
		s.maybeFetch(h)
	}
	if !s.cfg.Balance {
		return
	}
	for _, b := range s.rng.Perm(len(s.ring.hosts)) {
		if !s.ring.hosts[b].up {
			continue
		}
		a := s.rng.IntN(len(s.ring.hosts))
		if a == b || !s.ring.hosts[a].up {
			continue
		}
		lb, la := s.ring.hosts[b].load, s.ring.hosts[a].load
		switch {
		case shouldMove(lb, la, s.cfg.T):
			s.move(b, a)
		case shouldMove(la, lb, s.cfg.T):
			s.move(a, b)
		}
	}
}

// maybeFetch fetches host h's pointed-to blocks once it has held the
// pointers for the stabilization time, at the migration cap.
func (s *d2Sim) maybeFetch(h int) {
	x := &s.ring.hosts[h]
	if x.ptrBytes == 0 || s.now-x.ptrSince < s.cfg.PointerHold {
		return
	}
	s.res.Migrated += x.ptrBytes
	x.readyAt = max(x.readyAt, s.now) + s.transfer(x.ptrBytes)
	x.ptrBytes = 0
}

// transfer is how long bytes take at the migration cap.
func (s *d2Sim) transfer(bytes int64) time.Duration {
	return time.Duration(float64(bytes) * 8 / float64(s.cfg.MigrateBps) * float64(time.Second))
}

// move makes light host b leave and rejoin as heavy host a's predecessor,
// taking half of a's primary load (§6, Fig. 4). b's old range goes to its
// successor, which held it as a secondary; the r-th host after it fetches
// a new copy. b takes pointers to its new blocks if pointers are on, or
// fetches them now.
func (s *d2Sim) move(b, a int) {
	lo, hi := s.ring.rangeOf(a)
	if s.ring.at(s.ring.rank(a)-1) == b {
		lo, _ = s.ring.rangeOf(b) // b leaves first: its range joins a's
	}
	var es []d2Entry
	s.index.span(lo, hi, func(e d2Entry) bool { es = append(es, e); return true })
	pos, taken, ok := splitHalf(es)
	if !ok || pos == s.ring.hosts[b].pos {
		return
	}
	hb := &s.ring.hosts[b]
	succ := s.ring.at(s.ring.rank(b) + 1)
	s.ring.hosts[succ].load += hb.load
	s.res.Migrated += hb.load // the new r-th holder of b's old range
	ha := &s.ring.hosts[a]
	if ha.load > 0 {
		share := ha.ptrBytes * taken / ha.load
		ha.ptrBytes -= min(share, ha.ptrBytes)
	}
	ha.load -= taken
	hb.pos, hb.load = pos, taken
	s.ring.sort()
	s.res.Moves++
	if s.cfg.Pointers {
		hb.ptrBytes, hb.ptrSince = taken, s.now
		return
	}
	hb.ptrBytes = 0
	hb.readyAt = s.now + s.transfer(taken)
	s.res.Migrated += taken
}
