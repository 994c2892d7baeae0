package exp

import (
	"bytes"
	"crypto/sha512"
	"slices"
	"sort"
	"time"

	"triad/internal/d2/key"
)

// This file is the model of D2's placement and balancing that `triad sim
// d2`'s avail and balance experiments run: small functions with plain
// inputs (placePosition, shouldMove, splitHalf) that the real protocol in
// internal/d2 can replace. It is a model, not the node code.

// d2Placement is where a block's key puts it on the ring (§8, §9).
type d2Placement uint8

const (
	placeD2    d2Placement = iota // ordered: the key itself
	placeBlock                    // traditional: a hash of the block's key
	placeFile                     // traditional-file: a hash of the file's key, then block and version
)

var placementNames = [...]string{placeD2: "d2", placeBlock: "block", placeFile: "file"}

func (p d2Placement) String() string { return placementNames[p] }

// placePosition is the ring position of block k under placement p.
func placePosition(p d2Placement, k key.Key) key.Key {
	switch p {
	case placeBlock:
		return key.Key(sha512.Sum512(k[:]))
	case placeFile:
		base := k.Base()
		pos := key.Key(sha512.Sum512(base[:]))
		copy(pos[56:], k[56:]) // block and version keep a file's blocks apart
		return pos
	}
	return k
}

// shouldMove is D2's balancing decision (§6): a node whose primary load
// is light probes one whose load is heavy, and moves if heavy is more than
// t times light and has at least two blocks' worth to split.
func shouldMove(light, heavy int64, t float64) bool {
	return heavy >= 2*8192 && float64(heavy) > t*float64(light)
}

// splitHalf is where a mover joining as the predecessor of a node whose
// range holds entries (in ring order, bytes each) cuts it: the position of
// the entry at which the prefix reaches half the bytes, and that prefix's
// bytes. ok is false when no cut leaves both sides some load.
func splitHalf(entries []d2Entry) (pos key.Key, taken int64, ok bool) {
	var total int64
	for _, e := range entries {
		total += int64(e.bytes)
	}
	for i, e := range entries[:max(len(entries)-1, 0)] {
		taken += int64(e.bytes)
		if 2*taken >= total && !bytes.Equal(e.pos[:], entries[i+1].pos[:]) {
			return e.pos, taken, true
		}
	}
	return key.Key{}, 0, false
}

// d2Entry is a stored block: its ring position and bytes.
type d2Entry struct {
	pos   key.Key
	bytes int32
}

func cmpPos(a, b key.Key) int { return bytes.Compare(a[:], b[:]) }

// blockIndex is every stored block in ring order: sorted chunks, so that
// an insert moves at most a chunk.
type blockIndex struct {
	chunks [][]d2Entry
	n      int
}

const chunkMax = 256

// newBlockIndex sorts es (its own now) into an index.
func newBlockIndex(es []d2Entry) *blockIndex {
	slices.SortFunc(es, func(a, b d2Entry) int { return cmpPos(a.pos, b.pos) })
	es = slices.CompactFunc(es, func(a, b d2Entry) bool { return a.pos == b.pos })
	x := &blockIndex{n: len(es)}
	for len(es) > 0 {
		n := min(chunkMax/2, len(es))
		x.chunks = append(x.chunks, slices.Clip(es[:n]))
		es = es[n:]
	}
	return x
}

// chunkOf is the chunk a position belongs in.
func (x *blockIndex) chunkOf(pos key.Key) int {
	i := sort.Search(len(x.chunks), func(i int) bool {
		c := x.chunks[i]
		return cmpPos(c[len(c)-1].pos, pos) >= 0
	})
	return min(i, len(x.chunks)-1)
}

// put stores a block and returns the bytes it replaced (0 if new).
func (x *blockIndex) put(e d2Entry) int32 {
	if len(x.chunks) == 0 {
		x.chunks = [][]d2Entry{{e}}
		x.n = 1
		return 0
	}
	ci := x.chunkOf(e.pos)
	c := x.chunks[ci]
	j, found := slices.BinarySearchFunc(c, e.pos, func(a d2Entry, p key.Key) int { return cmpPos(a.pos, p) })
	if found {
		old := c[j].bytes
		c[j].bytes = e.bytes
		return old
	}
	c = slices.Insert(c, j, e)
	x.n++
	if len(c) > chunkMax {
		half := len(c) / 2
		x.chunks = slices.Insert(x.chunks, ci+1, slices.Clone(c[half:]))
		c = c[:half:half]
	}
	x.chunks[ci] = c
	return 0
}

// remove deletes the block at pos and returns its bytes.
func (x *blockIndex) remove(pos key.Key) (int32, bool) {
	if len(x.chunks) == 0 {
		return 0, false
	}
	ci := x.chunkOf(pos)
	c := x.chunks[ci]
	j, found := slices.BinarySearchFunc(c, pos, func(a d2Entry, p key.Key) int { return cmpPos(a.pos, p) })
	if !found {
		return 0, false
	}
	b := c[j].bytes
	c = slices.Delete(c, j, j+1)
	x.n--
	if len(c) == 0 {
		x.chunks = slices.Delete(x.chunks, ci, ci+1)
	} else {
		x.chunks[ci] = c
	}
	return b, true
}

// span calls fn on the blocks in the ring range (lo, hi], in ring order;
// lo == hi is the whole ring. It stops when fn returns false.
func (x *blockIndex) span(lo, hi key.Key, fn func(d2Entry) bool) {
	wraps := cmpPos(lo, hi) >= 0
	in := func(p key.Key) bool {
		if wraps {
			return cmpPos(p, lo) > 0 || cmpPos(p, hi) <= 0
		}
		return cmpPos(p, lo) > 0 && cmpPos(p, hi) <= 0
	}
	if len(x.chunks) == 0 {
		return
	}
	ci := x.chunkOf(lo)
	j, found := slices.BinarySearchFunc(x.chunks[ci], lo, func(a d2Entry, p key.Key) int { return cmpPos(a.pos, p) })
	if found {
		j++
	}
	for seen := 0; seen < x.n; seen++ {
		for j >= len(x.chunks[ci]) {
			ci, j = (ci+1)%len(x.chunks), 0
		}
		e := x.chunks[ci][j]
		if !in(e.pos) || !fn(e) {
			return
		}
		j++
	}
}

// d2Host is a host of the model: its ring position and what it holds.
type d2Host struct {
	pos  key.Key
	up   bool
	load int64 // primary bytes: the blocks whose successor it is
	// ptrBytes of its range it holds as block pointers since ptrSince
	// (§6); until it has fetched them (readyAt), its range is served by
	// the nodes after it, the old holders.
	ptrBytes int64
	ptrSince time.Duration
	readyAt  time.Duration
}

// d2Ring is the hosts in ring order.
type d2Ring struct {
	hosts []d2Host
	order []int // host indexes sorted by position
}

func (r *d2Ring) sort() {
	slices.SortFunc(r.order, func(a, b int) int { return cmpPos(r.hosts[a].pos, r.hosts[b].pos) })
}

// succ is the index in order of the first host at or after pos.
func (r *d2Ring) succ(pos key.Key) int {
	i := sort.Search(len(r.order), func(i int) bool { return cmpPos(r.hosts[r.order[i]].pos, pos) >= 0 })
	if i == len(r.order) {
		return 0
	}
	return i
}

// at is the host i places after order index o (wrapping).
func (r *d2Ring) at(o int) int { return r.order[(o+len(r.order))%len(r.order)] }

// rank is host h's index in order.
func (r *d2Ring) rank(h int) int {
	o := r.succ(r.hosts[h].pos)
	if r.order[o] != h {
		panic("exp: d2 ring order out of date")
	}
	return o
}

// primary is the host whose range holds pos.
func (r *d2Ring) primary(pos key.Key) int { return r.at(r.succ(pos)) }

// available says some holder of the block at pos is up at now: its r
// successors, or the r after its primary while the primary holds only
// pointers or is fetching.
func (r *d2Ring) available(pos key.Key, reps int, now time.Duration) bool {
	o := r.succ(pos)
	if h := &r.hosts[r.at(o)]; h.ptrBytes > 0 || h.readyAt > now {
		o++
	}
	for i := range reps {
		if r.hosts[r.at(o+i)].up {
			return true
		}
	}
	return false
}

// rangeOf is host h's range (pred, h].
func (r *d2Ring) rangeOf(h int) (lo, hi key.Key) {
	return r.hosts[r.at(r.rank(h)-1)].pos, r.hosts[h].pos
}

// storage is each host's total load: its own primary load and its r-1
// predecessors' (the secondary replicas it keeps).
func (r *d2Ring) storage(reps int) []float64 {
	out := make([]float64, len(r.hosts))
	for o, h := range r.order {
		for i := range reps {
			out[h] += float64(r.hosts[r.at(o-i)].load)
		}
	}
	return out
}
