package mem

import (
	"bytes"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/google/btree"

	"triad/internal/id"
	"triad/internal/merkle"
	"triad/internal/store"
)

// Mem is a store.Engine held in memory for the simulator. It keeps the same
// windows, tree and space accounting as disk.Disk, so experiments see the same
// expiry and reclamation behaviour, and with DropData it keeps sizes only.
type Mem struct {
	mu      sync.Mutex
	opt     store.Options
	objs    map[id.ID]*memObject
	windows map[int64]*memWindow
	tree    *merkle.Mem
	// pending are the tree's changes not yet hashed in: true adds the key,
	// false removes it. They are hashed in one batch when the tree is
	// read (flushTree), as merkle.Update asks: a store whose tree is never
	// read (D2's, and every engine in a simulator between sync rounds)
	// spent most of its time rehashing after each put (sim d2's chaos
	// experiment: 60 of 77 s).
	pending map[id.ID]bool
	expiry  *btree.BTreeG[expKey] // tree keys by expiry, to drop them on time
	dying   map[int64]struct{}    // windows with dead bytes, for compact
	usage   int64
	stats   store.Stats
	guard   store.ClockGuard // the time things expire at
}

type memObject struct {
	meta    store.Meta
	data    []byte
	window  int64
	damaged bool // see Damage
}

type memWindow struct {
	bytes int64
	keys  map[id.ID]struct{}
	// dead is the bytes of objects no longer stored (deleted, replaced by
	// a later copy, quarantined) that still count in bytes, as their
	// records still take space in disk.Disk's segments.
	dead int64
}

type expKey struct {
	at  int64
	key id.ID
}

func lessExp(a, b expKey) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.key.Cmp(b.key) < 0
}

// New returns an empty in-memory engine. A nil opt.Now is the wall clock,
// as for disk.Disk; simulations pass their virtual one.
func New(opt store.Options) *Mem {
	opt = opt.WithDefaults()
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Elapsed == nil {
		opt.Elapsed = store.ElapsedOf(opt.Now)
	}
	return &Mem{
		opt:     opt,
		objs:    make(map[id.ID]*memObject),
		windows: make(map[int64]*memWindow),
		tree:    merkle.NewMem(),
		pending: make(map[id.ID]bool),
		expiry:  btree.NewG(32, lessExp),
		dying:   make(map[int64]struct{}),
	}
}

// Put implements store.Engine.
func (m *Mem) Put(key id.ID, data []byte, expiry time.Time, opt store.PutOptions) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.opt.Now()
	if err := m.opt.CheckPut(key, data, expiry, now, opt); err != nil {
		return err
	}
	expiry = m.opt.Retain(expiry, now)
	old := m.objs[key]
	if old != nil && old.damaged && opt.Opaque {
		// disk.Disk reads an opaque copy to compare, finds the damage and
		// stores the new copy in its place.
		m.quarantine(key, old)
		old = nil
	}
	if old != nil {
		// A put never replaces what is stored; Mem always looks, Fresh or not.
		if err := m.sameObject(old, key, data, opt); err != nil {
			return err
		}
		if !expiry.After(old.meta.Expiry) {
			return nil
		}
	}
	size := int64(store.ObjectBytes(key.Width(), len(data)))
	if m.opt.Capacity > 0 && m.usage+size > m.opt.Capacity {
		m.reclaim(m.expiryNow(), m.opt.Capacity-size)
		if m.usage+size > m.opt.Capacity {
			return fmt.Errorf("%w: %d of %d bytes used and nothing expired to reclaim", store.ErrFull, m.usage, m.opt.Capacity)
		}
	}
	o := &memObject{
		meta:   store.Meta{Key: key, Size: len(data), Expiry: expiry, Opaque: opt.Opaque},
		window: m.opt.WindowOf(expiry),
	}
	if !m.opt.DropData {
		o.data = append([]byte(nil), data...)
	}
	if old != nil {
		m.forget(key, old)
		o.meta.InTree = m.inTree(key)
		if o.meta.InTree {
			m.expiry.Delete(expKey{old.meta.Expiry.UnixNano(), key})
			m.expiry.ReplaceOrInsert(expKey{expiry.UnixNano(), key})
		}
	}
	if !o.meta.InTree && m.opt.EntersTree(expiry, now) {
		o.meta.InTree = true
		m.treeChange(key, true)
		m.expiry.ReplaceOrInsert(expKey{expiry.UnixNano(), key})
	}
	w := m.windows[o.window]
	if w == nil {
		w = &memWindow{keys: make(map[id.ID]struct{})}
		m.windows[o.window] = w
	}
	w.keys[key] = struct{}{}
	w.bytes += size
	m.usage += size
	m.objs[key] = o
	m.maintain(m.expiryNow())
	return nil
}

// sameObject returns store.ErrConflict, wrapped, unless a put of data
// under key brings old again: the same kind and, if opaque, the same bytes
// (only their length when Mem keeps no data).
func (m *Mem) sameObject(old *memObject, key id.ID, data []byte, opt store.PutOptions) error {
	switch {
	case old.meta.Opaque != opt.Opaque:
		return fmt.Errorf("%w: %v holds an object of the other kind", store.ErrConflict, key)
	case !opt.Opaque:
		return nil // the key is the bytes' hash
	case m.opt.DropData && old.meta.Size != len(data),
		!m.opt.DropData && !bytes.Equal(old.data, data):
		return fmt.Errorf("%w: %v holds other opaque bytes", store.ErrConflict, key)
	}
	return nil
}

// Get implements store.Engine.
func (m *Mem) Get(key id.ID) ([]byte, store.Meta, error) { return m.GetInto(key, nil) }

// GetInto implements store.Engine; the result may alias buf.
func (m *Mem) GetInto(key id.ID, buf []byte) ([]byte, store.Meta, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, err := m.lookup(key)
	if err != nil {
		return nil, store.Meta{}, err
	}
	if o.damaged {
		return nil, store.Meta{}, m.quarantine(key, o)
	}
	return append(buf[:0], o.data...), o.meta, nil
}

// Damage marks key's stored copy as damaged, as a bad sector would: the
// next read quarantines it and reports store.ErrCorrupt, as disk.Disk does
// with a record that fails its checksums. Simulations and tests use it to
// make repair happen.
func (m *Mem) Damage(key id.ID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, err := m.lookup(key)
	if err != nil {
		return err
	}
	o.damaged = true
	return nil
}

// quarantine takes a damaged object out of the store and the tree, as
// disk.Disk does, so that nothing serves it and a put stores a good copy;
// its bytes count against capacity until its window is reclaimed.
func (m *Mem) quarantine(key id.ID, o *memObject) error {
	m.remove(key, o)
	m.stats.Quarantined++
	return fmt.Errorf("%w: %v", store.ErrCorrupt, key)
}

// Delete implements store.Engine. As disk.Disk writes a tombstone record
// into the deleted object's window, the window's bytes grow by one with
// no data; the object's own bytes count as dead until maintain drops them.
func (m *Mem) Delete(key id.ID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, err := m.lookup(key)
	if err != nil {
		return err
	}
	m.remove(key, o)
	tomb := int64(store.ObjectBytes(key.Width(), 0))
	m.windows[o.window].bytes += tomb
	m.usage += tomb
	return nil
}

// remove takes o, key's object, out of the store and the tree.
func (m *Mem) remove(key id.ID, o *memObject) {
	delete(m.objs, key)
	m.forget(key, o)
	if m.inTree(key) {
		m.treeChange(key, false)
		m.expiry.Delete(expKey{o.meta.Expiry.UnixNano(), key})
	}
}

// forget takes o, key's object, out of its window, its bytes now dead.
func (m *Mem) forget(key id.ID, o *memObject) {
	w := m.windows[o.window]
	delete(w.keys, key)
	w.dead += int64(store.ObjectBytes(key.Width(), o.meta.Size))
	m.dying[o.window] = struct{}{}
}

// Stat implements store.Engine.
func (m *Mem) Stat(key id.ID) (store.Meta, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, err := m.lookup(key)
	if err != nil {
		return store.Meta{}, err
	}
	return o.meta, nil
}

func (m *Mem) lookup(key id.ID) (*memObject, error) {
	if err := m.opt.CheckKey(key); err != nil {
		return nil, err
	}
	o := m.objs[key]
	if o == nil {
		return nil, fmt.Errorf("%w: %v", store.ErrNotFound, key)
	}
	return o, nil
}

// readTree runs fn on the tree after dropping keys that have expired.
func (m *Mem) readTree(fn func(r merkle.Reader)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.expireTree(m.expiryNow())
	m.flushTree()
	fn(m.tree)
}

// inTree reports whether key is in the tree, its pending change included.
func (m *Mem) inTree(key id.ID) bool {
	if add, ok := m.pending[key]; ok {
		return add
	}
	return m.tree.Has(key.Bytes())
}

// treeChange adds key to the tree or removes it, at the next flushTree.
func (m *Mem) treeChange(key id.ID, add bool) {
	if m.tree.Has(key.Bytes()) == add {
		delete(m.pending, key) // back to what the tree holds
		return
	}
	m.pending[key] = add
}

// flushTree hashes the pending changes into the tree, in key order.
func (m *Mem) flushTree() {
	if len(m.pending) == 0 {
		return
	}
	keys := make([]id.ID, 0, len(m.pending))
	for k := range m.pending {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, id.ID.Cmp)
	var add, remove [][]byte
	for _, k := range keys {
		if m.pending[k] {
			add = append(add, k.Bytes())
		} else {
			remove = append(remove, k.Bytes())
		}
	}
	clear(m.pending)
	merkle.Update(m.tree, add, remove)
}

// TreeNode implements store.Engine.
func (m *Mem) TreeNode(p merkle.Prefix) (n merkle.Node, err error) {
	m.readTree(func(r merkle.Reader) { n = merkle.Lookup(r, p) })
	return n, nil
}

// TreeChildren implements store.Engine.
func (m *Mem) TreeChildren(p merkle.Prefix) (kids []merkle.Node, err error) {
	m.readTree(func(r merkle.Reader) { kids = merkle.Children(r, p) })
	return kids, nil
}

// TreeKeys implements store.Engine.
func (m *Mem) TreeKeys(p merkle.Prefix, lo, hi id.ID, max int) (keys []id.ID, err error) {
	m.readTree(func(r merkle.Reader) { keys = merkle.KeysInRange(r, p, lo, hi, max) })
	return keys, nil
}

// CheckTree implements store.Engine: the tree's root against one recomputed from
// the objects.
func (m *Mem) CheckTree() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.expiryNow()
	m.expireTree(now)
	m.flushTree()
	var keys [][]byte
	for k, o := range m.objs {
		if o.meta.InTree && o.meta.Expiry.After(now) {
			keys = append(keys, k.Bytes())
		}
	}
	return store.CompareRoots(merkle.Lookup(m.tree, merkle.Root()), merkle.Recompute(keys))
}

// Maintain implements store.Engine.
func (m *Mem) Maintain() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.maintain(m.expiryNow())
	return nil
}

// expiryNow is the time things expire at: the clock, checked against the
// monotonic one (store.ClockGuard). m.mu is held.
func (m *Mem) expiryNow() time.Time { return m.guard.Now(m.opt.Now(), m.opt.Elapsed()) }

// maintain drops expired keys from the tree and reclaims space past the
// high-water mark, at now from expiryNow.
func (m *Mem) maintain(now time.Time) {
	m.expireTree(now)
	m.compact()
	if m.opt.Capacity > 0 {
		m.reclaim(now, int64(m.opt.HighWater*float64(m.opt.Capacity)))
	}
}

// expireTree removes from the tree every key whose expiry has come.
func (m *Mem) expireTree(now time.Time) {
	for {
		e, ok := m.expiry.Min()
		if !ok || e.at > now.UnixNano() {
			break
		}
		m.expiry.DeleteMin()
		m.treeChange(e.key, false)
	}
}

// compact gives back the dead bytes of every window less than half live,
// as disk.Disk rewrites such a segment.
func (m *Mem) compact() {
	for k := range m.dying {
		delete(m.dying, k)
		if w := m.windows[k]; w != nil && 2*w.dead > w.bytes {
			w.bytes -= w.dead
			m.usage -= w.dead
			m.stats.Compacted++
			m.stats.CompactedBytes += w.dead
			w.dead = 0
		}
	}
}

// reclaim drops whole expired windows (ReclaimMargin past their end at
// now, from expiryNow), oldest first, until usage is at most target or
// nothing expired is left.
func (m *Mem) reclaim(now time.Time, target int64) {
	if m.usage <= target {
		return
	}
	var ws []int64
	for w := range m.windows {
		if m.opt.Reclaimable(w, now) {
			ws = append(ws, w)
		}
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i] < ws[j] })
	for _, w := range ws {
		if m.usage <= target {
			return
		}
		for k := range m.windows[w].keys {
			delete(m.objs, k)
		}
		m.usage -= m.windows[w].bytes
		m.stats.ReclaimedBytes += m.windows[w].bytes
		delete(m.windows, w)
		m.stats.Reclaimed++
	}
}

// Stats implements store.Engine.
func (m *Mem) Stats() store.Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.stats
	s.ClockSteps = m.guard.Steps
	s.Objects = len(m.objs)
	m.flushTree()
	s.TreeKeys = m.tree.Len()
	s.Usage = m.usage
	s.Capacity = m.opt.Capacity
	s.Segments = len(m.windows)
	now := m.opt.Now()
	for w, mw := range m.windows {
		b := store.ExpiryBucket(m.opt.WindowEnd(w), now)
		s.ByExpiry[b] += mw.bytes
		s.ObjectsByExpiry[b] += len(mw.keys)
	}
	return s
}

// Close implements store.Engine; it has nothing to release.
func (m *Mem) Close() error { return nil }
