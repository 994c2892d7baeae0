package maint_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"triad/internal/deploy"
	"triad/internal/id"
	"triad/internal/maint"
	"triad/internal/merkle"
	"triad/internal/sim"
	"triad/internal/store"
	"triad/internal/store/mem"
)

// A host that fails for good leaves its blocks with one copy; its
// neighbours' maintenance makes the second again within a few rounds,
// pulling only into their own ranges.
func TestLostHostsBlocksGetBackToKCopies(t *testing.T) {
	c := newCluster(t, testOptions{hosts: 12, seed: 1})
	c.put(150, rand.New(rand.NewPCG(1, 1)))
	if under := c.underReplicated(2); len(under) > 0 {
		t.Fatalf("%d blocks under 2 copies right after their puts", len(under))
	}
	gone := c.s.Hosts()[5]
	held := 0
	for _, key := range c.keys {
		if _, err := gone.Storage().Engine().Stat(key); err == nil {
			held++
		}
	}
	if held == 0 {
		t.Fatalf("the host to fail holds no block: pick another")
	}
	c.s.Crash(gone)
	c.s.RunFor(3 * time.Minute)
	if under := c.underReplicated(2); len(under) > 0 {
		t.Fatalf("%d of %d blocks still under 2 copies 3 minutes after a host that held %d failed", len(under), len(c.keys), held)
	}
	var repaired uint64
	for _, h := range c.up() {
		repaired += stats(h).Repaired
	}
	if repaired < uint64(held) {
		t.Errorf("%d repairs for the %d blocks the failed host held", repaired, held)
	}
	t.Logf("%d blocks, %d on the failed host, %d repairs", len(c.keys), held, repaired)
}

// A round starts when the start of a vnode's replica range moves, not only
// when its nearest neighbours change: with rounds an hour apart, the host
// that becomes second successor of a failed host's keys (its own
// successor and predecessor unchanged) makes their second copies within a
// minute.
func TestRangeChangeStartsARound(t *testing.T) {
	c := newCluster(t, testOptions{hosts: 12, seed: 4, interval: time.Hour})
	c.s.RunFor(2 * time.Hour) // past the first periodic rounds
	c.put(100, rand.New(rand.NewPCG(4, 4)))
	gone := c.s.Hosts()[7]
	c.s.Crash(gone)
	c.s.RunFor(time.Minute)
	if under := c.underReplicated(2); len(under) > 0 {
		t.Fatalf("%d of %d blocks under 2 copies a minute after a host failed, with rounds an hour apart", len(under), len(c.keys))
	}
}

// A host whose disk is wiped comes back empty at new ring positions; the
// blocks it held are back at 2 copies once maintenance has run, and the
// wiped host pulls what its new range needs.
func TestWipedHostsBlocksGetBackToKCopies(t *testing.T) {
	c := newCluster(t, testOptions{hosts: 12, seed: 2})
	c.put(150, rand.New(rand.NewPCG(2, 2)))
	h := c.s.Hosts()[3]
	c.s.Wipe(h)
	c.s.RunFor(30 * time.Second)
	if err := c.s.Restart(h); err != nil {
		t.Fatal(err)
	}
	c.s.RunFor(4 * time.Minute)
	if under := c.underReplicated(2); len(under) > 0 {
		t.Fatalf("%d of %d blocks under 2 copies after a wipe and 4 minutes", len(under), len(c.keys))
	}
	if stats(h).Repaired == 0 {
		t.Errorf("the wiped host pulled nothing into its new range")
	}
}

// A host that restarts with its disk does not fetch again what it has, and
// once every range is whole a round fetches nothing: synchronization
// finds no difference.
func TestRestartAndSteadyStateFetchNothing(t *testing.T) {
	c := newCluster(t, testOptions{hosts: 10, seed: 3})
	c.put(120, rand.New(rand.NewPCG(3, 3)))
	c.s.RunFor(3 * time.Minute) // every range whole
	h := c.s.Hosts()[4]
	c.s.Crash(h)
	c.s.RunFor(20 * time.Second)
	if err := c.s.Restart(h); err != nil {
		t.Fatal(err)
	}
	c.s.RunFor(3 * time.Minute)
	if got := stats(h).Repaired; got != 0 {
		t.Errorf("the restarted host fetched %d objects it had kept", got)
	}
	before := map[*sim.Host]maint.Stats{}
	for _, h := range c.up() {
		before[h] = stats(h)
	}
	c.s.RunFor(3 * time.Minute)
	for _, h := range c.up() {
		b, a := before[h], stats(h)
		if a.Repaired != b.Repaired {
			t.Errorf("%s fetched %d objects in steady state", h.Addr, a.Repaired-b.Repaired)
		}
		if a.Rounds == b.Rounds {
			t.Errorf("%s ran no round in 3 minutes", h.Addr)
		}
		// Nothing changed since the last clean synchronization with each
		// neighbour and successor: each stops at its first query.
		walks := (a.Syncs - b.Syncs) + (a.Stretches - b.Stretches)
		if queries := a.NodesCompared - b.NodesCompared; queries > walks {
			t.Errorf("%s asked %d tree queries for %d synchronizations in steady state", h.Addr, queries, walks)
		}
		if a.Unchanged == b.Unchanged {
			t.Errorf("%s found no synchronization unchanged", h.Addr)
		}
	}
	if under := c.underReplicated(2); len(under) > 0 {
		t.Fatalf("%d blocks under 2 copies", len(under))
	}
	// A change on one side is not hidden by what the last synchronization
	// saw: a block stored on its key's successor alone (behind the block
	// store's back) reaches a second copy at the next round.
	data := []byte("stored on one host only, after the ring went quiet")
	key := id.Key(data)
	first := c.successors(key)[0]
	if err := first.Storage().Engine().Put(key, data, c.s.Epoch().Add(c.s.Now()+24*time.Hour), store.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	c.keys = append(c.keys, key)
	c.s.RunFor(3 * time.Minute)
	if n := c.copies(key); n < 2 {
		t.Fatalf("the block stored on one host has %d copies 3 rounds later", n)
	}
}

// A block stored only on a host outside its replica set (as a put does
// when the key's successors are down) is handed to the key's successor by
// global maintenance, and local maintenance then makes the second copy:
// it ends on the key's first two successors.
func TestStrandedCopyReachesItsReplicaSet(t *testing.T) {
	c := newCluster(t, testOptions{hosts: 10, seed: 4})
	r := rand.New(rand.NewPCG(4, 4))
	var stranded []id.ID
	for range 20 {
		data := make([]byte, 500)
		for j := range data {
			data[j] = byte(r.Uint32())
		}
		key := id.Key(data)
		succ := c.successors(key)
		far := succ[5] // well outside the key's first two successors
		if err := far.Storage().Engine().Put(key, data, c.s.Epoch().Add(c.s.Now()+24*time.Hour), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
		stranded = append(stranded, key)
	}
	c.s.RunFor(4 * time.Minute)
	for _, key := range stranded {
		for i, h := range c.successors(key)[:2] {
			if _, err := h.Storage().Engine().Stat(key); err != nil {
				t.Fatalf("key %v: successor %d (%s) has no copy after 4 minutes: %v", key.Short(), i, h.Addr, err)
			}
		}
	}
	var handed uint64
	for _, h := range c.up() {
		handed += stats(h).HandedOver
	}
	if handed < uint64(len(stranded)) {
		t.Errorf("%d hand-overs for %d stranded blocks", handed, len(stranded))
	}
}

// memTree is a TreeStore over a Merkle tree in memory, built in one batch:
// the storage engines answer with the same merkle functions.
type memTree struct{ t *merkle.Mem }

func (m memTree) TreeNode(p merkle.Prefix) (merkle.Node, error) { return merkle.Lookup(m.t, p), nil }
func (m memTree) TreeChildren(p merkle.Prefix) ([]merkle.Node, error) {
	return merkle.Children(m.t, p), nil
}
func (m memTree) TreeKeys(p merkle.Prefix, lo, hi id.ID, max int) ([]id.ID, error) {
	return merkle.KeysInRange(m.t, p, lo, hi, max), nil
}
func (m memTree) Stat(key id.ID) (store.Meta, error) {
	if m.t.Has(key.Bytes()) {
		return store.Meta{Key: key}, nil
	}
	return store.Meta{}, store.ErrNotFound
}

// A sync between two stores holding the same 1,000,000 keys in the range
// costs one query; with the neighbour holding other keys outside the
// range too, only the paths along the range's ends are walked: a bounded
// number of small messages, and no key list is sent for the equal middle.
func TestSyncOfAMillionEqualKeysIsBounded(t *testing.T) {
	const n = 1_000_000
	r := rand.New(rand.NewPCG(8, 8))
	lo, hi := id.Random(r, id.Bytes), id.Random(r, id.Bytes)
	keys := make([][]byte, n)
	for i := range keys {
		keys[i] = id.Random(r, id.Bytes).Bytes()
	}
	a, b := merkle.NewMem(), merkle.NewMem()
	merkle.Update(a, keys, nil)
	merkle.Update(b, keys, nil)
	q, bytes, missing, err := maint.SyncCost(memTree{a}, memTree{b}, lo, hi)
	if err != nil || q != 1 || len(missing) != 0 {
		t.Fatalf("equal stores: %d queries, %d bytes, %d missing, %v; want 1 query", q, bytes, len(missing), err)
	}
	t.Logf("equal stores of %d keys: %d query, %d bytes", n, q, bytes)
	// The neighbour also holds 100,000 keys outside the range.
	var outside [][]byte
	for range n / 10 {
		if k := id.Random(r, id.Bytes); !k.In(lo, hi) {
			outside = append(outside, k.Bytes())
		}
	}
	merkle.Update(b, outside, nil)
	q, bytes, missing, err = maint.SyncCost(memTree{a}, memTree{b}, lo, hi)
	if err != nil || len(missing) != 0 {
		t.Fatalf("%d missing, %v", len(missing), err)
	}
	if q > 2*4*merkle.Fanout || bytes > 1<<20 {
		t.Errorf("equal range, other keys outside it: %d queries, %d bytes", q, bytes)
	}
	t.Logf("equal range, 100,000 other keys outside it: %d queries, %d bytes", q, bytes)
	// One key missing in the middle of the range: found, with a walk down
	// one path more.
	var gone []byte
	for _, k := range keys {
		if x, _ := id.FromBytes(k); x.In(lo, hi) {
			gone = k
			break
		}
	}
	merkle.Update(a, nil, [][]byte{gone})
	q, bytes, missing, err = maint.SyncCost(memTree{a}, memTree{b}, lo, hi)
	if err != nil || len(missing) != 1 || string(missing[0].Bytes()) != string(gone) {
		t.Fatalf("one key gone: found %v, %v", missing, err)
	}
	t.Logf("one key gone: %d queries, %d bytes", q, bytes)
}

// With a repair budget, a host's repairs never run ahead of it (a second's
// worth, plus the object in flight), and still finish; meanwhile its
// status shows the fetches queued and their bytes.
func TestRepairBudgetPacesRepairs(t *testing.T) {
	const budget = 200 // bytes/s
	c := newCluster(t, testOptions{hosts: 12, seed: 1, budget: budget})
	c.put(150, rand.New(rand.NewPCG(1, 1)))
	start := map[*sim.Host]uint64{}
	for _, h := range c.up() {
		start[h] = stats(h).BytesRepaired
	}
	c.s.Crash(c.s.Hosts()[5])
	t0 := c.s.Now()
	paced, queued := false, false
	for step := 0; step < 60; step++ {
		c.s.RunFor(time.Second)
		elapsed := (c.s.Now() - t0).Seconds()
		for _, h := range c.up() {
			// What waits is shown with its bytes: blocks are 200-2,199 bytes.
			counters := map[string]uint64{}
			for _, ct := range deploy.Of(h).Maint.Status().Counters {
				counters[ct.Name] = ct.Value
			}
			if n, b := counters["queued_fetches"], counters["queued_fetch_bytes"]; b < 200*n || b > 2200*n {
				t.Fatalf("%s: %d fetches queued, %d bytes", h.Addr, n, b)
			} else if n > 0 {
				queued = true
			}
			got := stats(h).BytesRepaired - start[h]
			if limit := uint64(elapsed*budget) + budget + 2200; got > limit {
				t.Fatalf("%s repaired %d bytes in %.0fs with a budget of %d B/s", h.Addr, got, elapsed, budget)
			}
			if got > budget {
				paced = true
			}
		}
	}
	if !paced {
		t.Errorf("no host repaired more than a second's budget: the budget was not exercised")
	}
	if !queued {
		t.Errorf("no host ever showed a fetch queued behind the budget")
	}
	c.s.RunFor(5 * time.Minute)
	if under := c.underReplicated(2); len(under) > 0 {
		t.Fatalf("%d blocks under 2 copies with the budget", len(under))
	}
	for _, h := range c.up() {
		if n := deploy.Of(h).Maint.Waiting(); n > 2 {
			t.Errorf("%s: %d waiting on the budget, more than its round and sweep", h.Addr, n)
		}
	}
}

// Under a repair budget, repairs wait in a queue, and the objects that
// expire soonest go last: the blocks a failed host held come back in order
// of their expiry, latest first, at each host that repairs them (but for
// the first fetch or two, which start before the walk has found the rest).
func TestRepairsQueueLatestExpiryFirst(t *testing.T) {
	c := newCluster(t, testOptions{hosts: 12, seed: 9, budget: 1000})
	r := rand.New(rand.NewPCG(9, 9))
	life := map[int]time.Duration{}
	c.putFor(200, r, func(i int) time.Duration {
		life[i] = 2*time.Hour + time.Duration(r.IntN(48*60))*time.Minute
		return life[i]
	})
	expiry := map[id.ID]time.Duration{}
	for i, key := range c.keys {
		expiry[key] = life[i]
	}
	held := func(h *sim.Host, key id.ID) bool {
		_, err := h.Storage().Engine().Stat(key)
		return err == nil
	}
	before := map[*sim.Host]map[id.ID]bool{}
	for _, h := range c.up() {
		before[h] = map[id.ID]bool{}
		for _, key := range c.keys {
			before[h][key] = held(h, key)
		}
	}
	c.s.Crash(c.s.Hosts()[4])
	// Note, at each host, the order in which new copies come.
	order := map[*sim.Host][]id.ID{}
	for deadline := c.s.Now() + 10*time.Minute; c.s.Now() < deadline && len(c.underReplicated(2)) > 0; {
		c.s.RunFor(200 * time.Millisecond)
		for _, h := range c.up() {
			for _, key := range c.keys {
				if !before[h][key] && held(h, key) {
					before[h][key] = true
					order[h] = append(order[h], key)
				}
			}
		}
	}
	if under := c.underReplicated(2); len(under) > 0 {
		t.Fatalf("%d blocks under 2 copies 10 minutes after a host failed, with a budget of 1,000 B/s", len(under))
	}
	// In order, a host's new copies run from the latest expiry down, but
	// for a step up where one synchronization ends and the next begins
	// (successor, then predecessor) and where a fetch started before the
	// walk found a later key. In the walk's order, every other step is up.
	steps, up, repaired := 0, 0, 0
	for _, keys := range order {
		repaired += len(keys)
		for i := 1; i < len(keys); i++ {
			steps++
			if expiry[keys[i]] > expiry[keys[i-1]] {
				up++
			}
		}
	}
	if repaired < 20 {
		t.Fatalf("only %d repairs seen: the failed host held too little", repaired)
	}
	if up*5 > steps {
		t.Errorf("%d of %d consecutive repairs at one host went to a later expiry", up, steps)
	}
	t.Logf("%d repairs at %d hosts; %d of %d consecutive ones went to a later expiry", repaired, len(order), up, steps)
}

// An object whose turn in the repair queue comes after its expiry is not
// fetched: the queue knows each key's expiry, and the budget is not spent
// on what would be dropped on arrival. Half the blocks live 20 minutes,
// half a day; behind a budget of 20 B/s a failed host's blocks take about
// half an hour to come back, the short-lived ones last.
func TestExpiredWhileQueuedIsNotFetched(t *testing.T) {
	c := newCluster(t, testOptions{hosts: 12, seed: 4, budget: 20})
	r := rand.New(rand.NewPCG(4, 4))
	short := map[id.ID]bool{}
	c.putFor(150, r, func(i int) time.Duration {
		if i%2 == 0 {
			return 20 * time.Minute
		}
		return 24 * time.Hour
	})
	for i, key := range c.keys {
		short[key] = i%2 == 0
	}
	c.s.Crash(c.s.Hosts()[6])
	c.s.RunFor(time.Hour)
	var expired, repaired, served uint64
	for _, h := range c.up() {
		expired += stats(h).Expired
		repaired += stats(h).Repaired
		served += deploy.Of(h).Blocks.Stats.Fetched
	}
	if expired == 0 {
		t.Fatalf("no object expired while queued (%d repaired): the test did not exercise it", repaired)
	}
	// Maintenance is the only reader here: every copy served was stored.
	if served != repaired {
		t.Errorf("%d copies served to maintenance, %d repaired: %d fetched past their expiry", served, repaired, served-repaired)
	}
	for _, key := range c.keys {
		if !short[key] && c.copies(key) < 2 {
			t.Errorf("a day-long block is under 2 copies an hour after the failure")
			break
		}
	}
	t.Logf("%d repaired, %d expired before their turn", repaired, expired)

	// Dropping the expired keys at the end of a queue gives back the
	// transfer the budget had granted: the hosts that dropped them still
	// repair. (They once stalled for good, the budget's one transfer held
	// by a fetch that never started; the year experiment then ended with
	// live objects at one copy.)
	for _, h := range c.up() {
		if n := deploy.Of(h).Maint.Transfers(); n != 0 {
			t.Errorf("%s: %d transfers in flight with nothing to fetch", h.Addr, n)
		}
	}
	// The predecessor of a host that dropped some fails: that host must
	// pull the keys of the predecessor's range.
	var dropped *sim.Host
	for _, h := range c.up() {
		if stats(h).Expired > 0 {
			dropped = h
			break
		}
	}
	before := stats(dropped).Repaired
	c.s.Crash(c.s.HostAt(deploy.Of(dropped).Ring.Vnodes()[0].Predecessor().Addr))
	c.s.RunFor(30 * time.Minute)
	for _, key := range c.keys {
		if !short[key] && c.copies(key) < 2 {
			t.Fatalf("a day-long block is under 2 copies 30 minutes after a second failure")
		}
	}
	if stats(dropped).Repaired == before {
		t.Errorf("%s repaired nothing after its predecessor failed", dropped.Addr)
	}
}

// With several vnodes per host, copies go on distinct machines, so a
// vnode's range must end at its own machine's previous vnode, or where k
// other machines come before it: blocks whose copy a failed host held are
// back at 2 copies on distinct hosts.
func TestSeveralVnodesPerHost(t *testing.T) {
	for _, vnodes := range []int{2, 4} {
		c := newCluster(t, testOptions{hosts: 8, seed: 3, vnodes: vnodes})
		c.put(150, rand.New(rand.NewPCG(3, uint64(vnodes))))
		c.s.Crash(c.s.Hosts()[5])
		c.s.RunFor(4 * time.Minute)
		if under := c.underReplicated(2); len(under) > 0 {
			t.Fatalf("%d vnodes per host: %d of %d blocks under 2 copies 4 minutes after a host failed", vnodes, len(under), len(c.keys))
		}
	}
}

// A missing fragment is rebuilt from 7 others, under an index no holder
// has: the first successor of each key loses its fragment, finds it
// missing at its next round, and rebuilds it.
func TestMissingFragmentsAreRebuilt(t *testing.T) {
	c := newCluster(t, testOptions{hosts: 16, seed: 6})
	keys := c.putFragments(20, rand.New(rand.NewPCG(6, 6)))
	c.s.RunFor(time.Minute)
	if gaps := c.fragmentGaps(keys); len(gaps) > 0 {
		t.Fatalf("right after the puts: %v", gaps)
	}
	for _, key := range keys {
		h := c.successors(key)[0]
		e := h.Storage().Engine().(*mem.Mem)
		e.Damage(key)
		e.Get(key) // the read finds the damage and quarantines the copy
		if _, err := e.Stat(key); err == nil {
			t.Fatalf("%s still has its copy of %v after the damage", h.Addr, key.Short())
		}
	}
	c.s.RunFor(3 * time.Minute)
	if gaps := c.fragmentGaps(keys); len(gaps) > 0 {
		t.Fatalf("3 minutes after %d fragments were lost: %v", len(keys), gaps)
	}
	var rebuilt, notRebuilt uint64
	for _, h := range c.up() {
		rebuilt += stats(h).Rebuilt
		notRebuilt += stats(h).Fragments
	}
	if rebuilt < uint64(len(keys)) || notRebuilt > 0 {
		t.Errorf("%d fragments rebuilt, %d not, for %d lost", rebuilt, notRebuilt, len(keys))
	}
}

// In a deployment that stores fragments by default, rounds keep the
// fragments of a vnode's whole fragment range (its 14th predecessor on):
// two hosts that fail for good at once leave one or two fragments missing
// from every block they held some of, and the hosts that become each
// block's 13th and 14th successors rebuild them, under indices no other
// holder has (each takes the missing index at its rank).
func TestLostHostsFragmentsAreRebuilt(t *testing.T) {
	c := newCluster(t, testOptions{hosts: 20, seed: 7, fragments: true})
	keys := c.putFragments(40, rand.New(rand.NewPCG(7, 7)))
	c.s.RunFor(time.Minute)
	if gaps := c.fragmentGaps(keys); len(gaps) > 0 {
		t.Fatalf("right after the puts: %v", gaps)
	}
	held, both := 0, 0
	for _, key := range keys {
		n := 0
		for _, gone := range []*sim.Host{c.s.Hosts()[3], c.s.Hosts()[11]} {
			if _, err := gone.Storage().Engine().Stat(key); err == nil {
				n++
			}
		}
		held += n
		if n == 2 {
			both++
		}
	}
	if both == 0 {
		t.Fatalf("no block had fragments on both hosts to fail: pick others")
	}
	c.s.Crash(c.s.Hosts()[3])
	c.s.Crash(c.s.Hosts()[11])
	c.s.RunFor(5 * time.Minute)
	if gaps := c.fragmentGaps(keys); len(gaps) > 0 {
		t.Fatalf("5 minutes after two hosts holding %d fragments failed: %d gaps: %v", held, len(gaps), gaps)
	}
	var rebuilt uint64
	for _, h := range c.up() {
		rebuilt += stats(h).Rebuilt
	}
	if rebuilt < uint64(held) {
		t.Errorf("%d fragments rebuilt for the %d the failed hosts held", rebuilt, held)
	}
	t.Logf("%d blocks as 7-of-14 fragments on 20 hosts; the failed hosts held %d (%d blocks on both); %d rebuilt", len(keys), held, both, rebuilt)
}

// A re-put for 30 days reaches one holder of each block put for an hour
// (the other missed it): maintenance gives the other holder's copy the
// later expiry, before or once it expires, so that an hour later every
// block still has 2 live copies, each kept for the 30 days.
func TestStaleExpiryIsRefreshedFromAPartner(t *testing.T) {
	c := newCluster(t, testOptions{hosts: 12, seed: 27})
	c.putFor(40, rand.New(rand.NewPCG(27, 1)), func(int) time.Duration { return time.Hour })
	later := c.s.Now() + 30*24*time.Hour
	live := func(key id.ID) (n int) {
		for _, h := range c.up() {
			if m, err := h.Storage().Engine().Stat(key); err == nil && m.Expiry.After(c.s.Epoch().Add(c.s.Now())) {
				n++
			}
		}
		return n
	}
	for _, key := range c.keys {
		var holders []*sim.Host
		for _, h := range c.up() {
			if _, err := h.Storage().Engine().Stat(key); err == nil {
				holders = append(holders, h)
			}
		}
		if len(holders) != 2 {
			t.Fatalf("%d holders after the put", len(holders))
		}
		e := holders[0].Storage().Engine()
		data, _, err := e.Get(key)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.Put(key, data, c.s.Epoch().Add(later), store.PutOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	c.s.RunFor(90 * time.Minute)
	var extended, repaired uint64
	for _, h := range c.up() {
		extended += stats(h).Extended
		repaired += stats(h).Repaired
	}
	for _, key := range c.keys {
		if n := live(key); n < 2 {
			t.Fatalf("%d live copies 90 minutes after the re-put for 30 days (%d extended, %d repaired)", n, extended, repaired)
		}
	}
	t.Logf("%d copies extended in place, %d fetched again", extended, repaired)
}
