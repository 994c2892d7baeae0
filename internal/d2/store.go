package d2

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"time"

	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/merkle"
	"triad/internal/node"
	"triad/internal/rpc"
	"triad/internal/store"
	"triad/internal/wire"
)

// hashBytes is the length of a block's content hash: SHA-256.
const hashBytes = sha256.Size

// Sum is the content hash a get checks a block against: SHA-256.
func Sum(data []byte) []byte {
	s := sha256.Sum256(data)
	return s[:]
}

// engineOp is what an engineWork asks of the engine.
type engineOp uint8

const (
	opPut engineOp = iota + 1
	opGet
	opDelete
	opScan
	opStats // the engine's Stats (a D2GetSpace)
)

// engineWork is one read or write of the node's engine, run off the event
// loop. owner only tells the node its own work apart; Run never touches it.
type engineWork struct {
	owner  *Node
	e      store.Engine
	op     engineOp
	key    id.ID
	data   []byte
	expiry time.Time
	max    int
	// replace: a put deletes what the key holds first (the engine's Put
	// never replaces); otherwise other bytes under the key are a conflict.
	replace bool
	// proof is kept with the bytes put (proof.go); guard refuses a
	// replace of a held copy it does not supersede (a copy another node
	// gave, not this owner's decision).
	proof wire.D2Proof
	guard bool
	done  func(env node.Env, res any, err error)
}

// getResult is a read block, its content hash, its version and its proof.
type getResult struct {
	data    []byte
	sum     [hashBytes]byte
	version uint64
	proof   wire.D2Proof
}

// blockCopy is a copy of a block as some holder keeps it: its bytes and
// its version (wire.D2Store.Version; zero when the holder did not say).
type blockCopy struct {
	data    []byte
	version uint64
	proof   wire.D2Proof // the writer's consent (proof.go)
	// vouches, in newest's answer: the nodes asked (this one included)
	// that vouched for the key, found or not (doubt.go).
	vouches int
}

// copyDone receives a copy read here or fetched from a holder.
type copyDone func(env node.Env, c blockCopy, ok bool)

// Versions order the copies of a key that was replaced (wire.D2Store's
// Version): a block's version is its engine record's expiry, in Unix
// nanoseconds, so it needs no record of its own and survives a restart
// with the block. The key's owner stamps what it decides to store
// (stamp), and every copy made of a block (replicas, sync's pushes, a
// get's repairs) keeps the version it was read with.

// stamp is the version the owner gives a block it stores: its retention
// from now, and past every version known of the key.
func (n *Node) stamp(env node.Env, known uint64) uint64 {
	v := uint64(env.Now().Add(n.cfg.Retention).UnixNano())
	if v <= known {
		v = known + 1
	}
	return v
}

// expiryOf is the engine expiry that stores version v; zero asks for a
// fresh one, as a block stored for the first time gets.
func (n *Node) expiryOf(env node.Env, v uint64) time.Time {
	if v == 0 {
		return env.Now().Add(n.cfg.Retention)
	}
	return time.Unix(0, int64(v))
}

// versionSkew bounds how far past its own stamp a node takes a version
// another node sends: clocks that disagree by more are refused rather
// than let a copy outlive every later replace.
const versionSkew = time.Hour

func (w *engineWork) Run(node.Storage) (any, error) {
	switch w.op {
	case opPut:
		return nil, w.put()
	case opGet:
		rec, meta, err := w.e.Get(w.key)
		if err != nil {
			return nil, err
		}
		proof, data := decodeStored(rec)
		return getResult{data: data, sum: sha256.Sum256(data), version: uint64(meta.Expiry.UnixNano()), proof: proof}, nil
	case opDelete:
		return nil, w.e.Delete(w.key)
	case opScan:
		return scan(w.e, w.max)
	case opStats:
		return w.e.Stats(), nil
	}
	panic(fmt.Sprintf("d2: engine op %d", w.op))
}

// put stores the block with its proof; a replace deletes the key's other
// bytes first. A reader between the two finds nothing, never bytes of
// neither version. The same bytes held with another proof are the same
// block: kept as held.
func (w *engineWork) put() error {
	opt := store.PutOptions{Opaque: true}
	rec := encodeStored(w.proof, w.data)
	err := w.e.Put(w.key, rec, w.expiry, opt)
	if !errors.Is(err, store.ErrConflict) {
		return err
	}
	for range 2 { // a second time if another put slipped in between
		if held, _, gerr := w.e.Get(w.key); gerr == nil {
			heldProof, heldData := decodeStored(held)
			switch {
			case bytes.Equal(heldData, w.data):
				// The same block: its record as held, to the later expiry.
				return w.e.Put(w.key, held, w.expiry, opt)
			case !w.replace:
				return err
			case w.guard && !supersedes(w.proof, sha256.Sum256(w.data), heldProof, sha256.Sum256(heldData)):
				return errStale
			}
		}
		if err := w.e.Delete(w.key); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		if err = w.e.Put(w.key, rec, w.expiry, opt); !errors.Is(err, store.ErrConflict) {
			return err
		}
	}
	return err
}

func (w *engineWork) String() string { return fmt.Sprintf("d2-engine(%d, %s)", w.op, w.key.Short()) }

// scan lists up to max keys the engine holds, with their sizes.
func scan(e store.Engine, max int) ([]entry, error) {
	lo := id.Min(KeyBytes)
	keys, err := e.TreeKeys(merkle.Root(), lo, lo, max)
	if err != nil {
		return nil, err
	}
	out := make([]entry, 0, len(keys))
	for _, k := range keys {
		meta, err := e.Stat(k)
		if err != nil {
			continue // expired or quarantined since
		}
		out = append(out, entry{key: k, size: uint32(meta.Size), version: uint64(meta.Expiry.UnixNano())})
	}
	slices.SortFunc(out, func(a, b entry) int { return a.key.Cmp(b.key) })
	return out, nil
}

func (n *Node) offload(env node.Env, w *engineWork) {
	w.owner, w.e = n, n.engine
	env.Offload(w)
}

// loadIndex reads the keys an earlier run stored.
func (n *Node) loadIndex(env node.Env) {
	n.offload(env, &engineWork{op: opScan, max: n.cfg.MaxBlocks, done: func(env node.Env, res any, err error) {
		l, _ := res.([]entry)
		for _, e := range l {
			if _, ok := n.idx.get(e.key); !ok {
				n.idx.put(e)
			}
		}
		if len(l) > 0 {
			env.After(jitter(env, min(n.cfg.Sync, 2*n.cfg.Stabilize)), restartSyncTimer{})
		}
	}})
}

// errStale refuses a replace older than the copy held: a copy of a key
// made before its last replace, which the replace's version outranks.
var errStale = fmt.Errorf("d2: %w: an older version than the copy held", store.ErrConflict)

// keepCopy stores a copy of block k another node gave this one (a
// replica's store, a push, a pull, a pointer's fetch, a get's repair),
// once its proof verifies (proof.go): writeLocal's rules, and a replace
// only of a held copy it supersedes.
func (n *Node) keepCopy(env node.Env, k id.ID, c blockCopy, replace bool, done func(env node.Env, err error)) {
	replace, err := n.checkCopy(env, k, c, replace)
	if err != nil {
		done(env, err)
		return
	}
	n.writeLocal(env, k, c, replace, n.cfg.CheckPeers, done)
}

// writeLocal stores a block, with its proof, in this node's engine and
// index, at c's version (zero: a fresh one): in place of what the key
// holds if replace and the version is not older than the held copy's
// (and, with guard, the held copy's proof does not outrank c's), else
// only if it holds nothing or the same bytes (store.ErrConflict
// otherwise).
func (n *Node) writeLocal(env node.Env, k id.ID, c blockCopy, replace, guard bool, done func(env node.Env, err error)) {
	data, version := c.data, c.version
	if n.cfg.AckAndDrop {
		done(env, nil) // the rogue's lie: nothing kept
		return
	}
	if !replace && n.deleted(env, k) {
		done(env, errDeleted) // a pushed copy of a deleted key
		return
	}
	held, ok := n.idx.get(k)
	if ok && !held.pointer() && replace && version != 0 && held.version > version {
		done(env, errStale)
		return
	}
	if replace {
		n.tombs.clear(k) // the owner's put: the key lives again
	}
	if !ok && n.idx.len() >= n.cfg.MaxBlocks {
		done(env, fmt.Errorf("d2: %w: %d keys held", fault.ErrFull, n.idx.len()))
		return
	}
	data = bytes.Clone(data)
	expiry := n.expiryOf(env, version)
	n.offload(env, &engineWork{op: opPut, key: k, data: data, expiry: expiry, replace: replace, proof: c.proof, guard: guard, done: func(env node.Env, _ any, err error) {
		if err == nil {
			v := uint64(expiry.UnixNano())
			if cur, ok := n.idx.get(k); ok && !cur.pointer() && !replace && cur.version > v {
				v = cur.version // the same bytes again: the engine kept the later expiry
			}
			n.idx.put(entry{key: k, size: uint32(len(data)), version: v})
			n.Stats.BytesWritten += uint64(len(data))
		}
		done(env, err)
	}})
}

// readLocal reads a block from this node's engine; a hash given must match.
func (n *Node) readLocal(env node.Env, k id.ID, hash []byte, done copyDone) {
	n.offload(env, &engineWork{op: opGet, key: k, done: func(env node.Env, res any, err error) {
		r, isRes := res.(getResult)
		switch {
		case errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrCorrupt):
			// The engine lost it (a damaged record is quarantined): no
			// longer listed here, so that sync and gets put a copy back.
			if e, ok := n.idx.get(k); ok && !e.pointer() {
				n.idx.remove(k)
				n.Stats.LostLocal++
			}
			done(env, blockCopy{}, false)
		case err != nil || !isRes:
			done(env, blockCopy{}, false)
		case len(hash) > 0 && !bytes.Equal(r.sum[:], hash):
			n.Stats.Mismatches++
			done(env, blockCopy{}, false)
		default:
			done(env, blockCopy{data: r.data, version: r.version, proof: r.proof}, true)
		}
	}})
}

// dropLocal deletes a key this node no longer keeps.
func (n *Node) dropLocal(env node.Env, k id.ID) bool {
	e, ok := n.idx.get(k)
	if !ok {
		return false
	}
	n.idx.remove(k)
	n.Stats.Dropped++
	if !e.pointer() {
		n.offload(env, &engineWork{op: opDelete, key: k, done: func(node.Env, any, error) {}})
	}
	return true
}

// handleStore stores a block: one replica, in place of what the key
// holds if the owner said Replace; or, Primary, a gateway's put for this
// node, the key's owner, to decide (ownerPut).
func (n *Node) handleStore(env node.Env, in node.MsgIn, m *wire.D2Store) {
	if m.Primary {
		if err := n.checkRelayedPut(env, m); err != nil {
			rpc.RespondError(env, in, n.self, fault.CodeOf(err), err.Error())
			return
		}
		p := putReq{key: m.Key, data: m.Data, mode: m.Mode, prev: m.Prev, auth: m.Auth}
		if m.ConfirmTo == in.Env.From.Addr {
			// A gateway names only itself: its replicas' word goes
			// nowhere else.
			p.confirmTo, p.tag = m.ConfirmTo, m.Tag
		}
		n.answerPut(env, in, p)
		return
	}
	if m.Version > n.stamp(env, 0)+uint64(versionSkew) {
		rpc.RespondError(env, in, n.self, fault.CodeBadRequest, "d2: a version past this node's clock")
		return
	}
	n.keepCopy(env, m.Key, copyOf(m), m.Replace, func(env node.Env, err error) {
		switch {
		case errors.Is(err, store.ErrConflict):
			rpc.Respond(env, in, n.self, &wire.D2StoreDone{Conflict: true})
		case err != nil:
			rpc.RespondError(env, in, n.self, fault.CodeOf(err), err.Error())
		default:
			rpc.Respond(env, in, n.self, &wire.D2StoreDone{Copies: 1})
			n.confirmStored(env, m)
		}
	})
}

// replicaTargets are the successors that keep this node's keys' replicas.
// A successor that failed an audit is passed over (audit.go).
func (n *Node) replicaTargets() []wire.D2Ref {
	l := slices.Clone(n.succs)
	if len(n.distrusted) > 0 {
		l = slices.DeleteFunc(l, func(s wire.D2Ref) bool { _, d := n.distrusted[s.Node.Addr]; return d })
	}
	return dedupe(l, n.self.Addr, n.cfg.Replicas-1)
}

// replicate stores a block the owner decided to store on the r-1
// successors, in place of what they hold (a stale copy, or the record of
// a delete: the owner's word wins), and counts the copies. Each successor
// also tells the gateway confirmTo, if any, of its copy, for its tag.
func (n *Node) replicate(env node.Env, k id.ID, c blockCopy, confirmTo node.Addr, tag uint64, done func(env node.Env, copies int)) {
	targets := n.replicaTargets()
	if len(targets) == 0 {
		done(env, 0)
		return
	}
	left, copies := len(targets), 0
	for _, t := range targets {
		m := copyMsg(k, c, true)
		m.ConfirmTo, m.Tag = confirmTo, tag
		ok := n.call(env, t.Node.Addr, m, func(env node.Env, reply wire.Msg, err error) {
			if s, ok := reply.(*wire.D2StoreDone); err == nil && ok && s.Copies > 0 {
				copies++
			}
			if left--; left == 0 {
				done(env, copies)
			}
		})
		if !ok {
			left--
		}
	}
	if left == 0 {
		done(env, copies)
	}
}

// handleFetch serves a block: from the engine, or through a pointer held
// here (unless Local); NoData answers whether it was found, without it.
func (n *Node) handleFetch(env node.Env, in node.MsgIn, m *wire.D2Fetch) {
	if !m.Local && !n.mayOwn(m.Key) {
		rpc.Respond(env, in, n.self, &wire.D2Block{Key: m.Key, NotMine: true})
		return
	}
	n.fetchHere(env, m.Key, m.Hash, !m.Local, func(env node.Env, c blockCopy, ok bool) {
		if m.NoData {
			c.data, c.proof = nil, wire.D2Proof{}
		}
		rpc.Respond(env, in, n.self, &wire.D2Block{Key: m.Key, Data: c.data, Found: ok, Version: c.version, Unsure: !n.vouchesFor(env, m.Key), Proof: c.proof})
	})
}

// fetchHere reads a block this node holds; a pointer is followed to its
// holder, then to this node's successors, when follow is set.
func (n *Node) fetchHere(env node.Env, k id.ID, hash []byte, follow bool, done copyDone) {
	e, ok := n.idx.get(k)
	switch {
	case !ok:
		n.Stats.NotFound++
		done(env, blockCopy{}, false)
	case !e.pointer():
		n.readLocal(env, k, hash, done)
	case !follow:
		done(env, blockCopy{}, false)
	default:
		from := []wire.NodeRef{e.holder}
		for _, s := range n.replicaTargets() {
			from = append(from, s.Node)
		}
		n.fetchFrom(env, k, hash, from, done)
	}
}

// fetchFrom asks each node in turn for a block in its own engine.
func (n *Node) fetchFrom(env node.Env, k id.ID, hash []byte, from []wire.NodeRef, done copyDone) {
	for len(from) > 0 && from[0].Addr == n.self.Addr {
		from = from[1:]
	}
	if len(from) == 0 {
		done(env, blockCopy{}, false)
		return
	}
	ok := n.call(env, from[0].Addr, &wire.D2Fetch{Key: k, Hash: hash, Local: true}, func(env node.Env, reply wire.Msg, err error) {
		b, ok := reply.(*wire.D2Block)
		if err == nil && ok && b.Found && (len(hash) == 0 || bytes.Equal(Sum(b.Data), hash)) {
			done(env, blockCopy{data: b.Data, version: b.Version, proof: b.Proof}, true)
			return
		}
		if err == nil && ok && b.Found {
			n.Stats.Mismatches++
		}
		n.fetchFrom(env, k, hash, from[1:], done)
	})
	if !ok {
		done(env, blockCopy{}, false)
	}
}

// newest reads k's copy here (if this node holds its block) and asks each
// node of from for its own, all at once, and answers the copy of the
// greatest version; ok is false when none was found. A copy of an older
// version is what a holder keeps when a replace missed it (it was down):
// the owner decides conditional puts against the newest copy, and Latest
// answers it.
func (n *Node) newest(env node.Env, k id.ID, from []wire.NodeRef, done copyDone) {
	var best blockCopy
	found := false
	vouches := 0
	if n.vouchesFor(env, k) {
		vouches++
	}
	left := 1
	take := func(env node.Env, c blockCopy, ok bool) {
		if ok && (!found || c.version > best.version) {
			best, found = c, true
		}
		if left--; left == 0 {
			best.vouches = vouches
			done(env, best, found)
		}
	}
	asked := map[node.Addr]bool{n.self.Addr: true}
	for _, f := range from {
		if asked[f.Addr] {
			continue
		}
		asked[f.Addr] = true
		left++
		if !n.call(env, f.Addr, &wire.D2Fetch{Key: k, Local: true}, func(env node.Env, reply wire.Msg, err error) {
			b, ok := reply.(*wire.D2Block)
			if err != nil || !ok {
				take(env, blockCopy{}, false)
				return
			}
			if !b.Unsure && !b.NotMine {
				vouches++
			}
			take(env, blockCopy{data: b.Data, version: b.Version, proof: b.Proof}, b.Found)
		}) {
			left--
		}
	}
	if e, ok := n.idx.get(k); ok && !e.pointer() {
		n.readLocal(env, k, nil, take)
		return
	}
	take(env, blockCopy{}, false)
}

// handleDrop deletes a replica, and remembers the delete (tombs.go).
func (n *Node) handleDrop(env node.Env, in node.MsgIn, m *wire.D2Drop) {
	if err := n.checkDrop(env, m); err != nil {
		rpc.RespondError(env, in, n.self, fault.CodeOf(err), err.Error())
		return
	}
	var c uint32
	if n.deleteHere(env, m.Key, m.Auth) {
		c = 1
	}
	rpc.Respond(env, in, n.self, &wire.D2StoreDone{Copies: c})
}

// handlePointers takes block pointers for keys this node now owns (§6): it
// fetches the blocks once it has held them for the pointer stabilization
// time, or hands them on if it moves first.
func (n *Node) handlePointers(env node.Env, m *wire.D2Pointers) {
	now := env.Now()
	for _, p := range m.Pointers {
		if _, held := n.idx.get(p.Key); held || n.idx.len() >= n.cfg.MaxBlocks || p.Holder.Addr == n.self.Addr || n.deleted(env, p.Key) {
			continue
		}
		n.idx.put(entry{key: p.Key, size: uint32(p.Size), holder: p.Holder, since: now})
		n.Stats.PointersReceived++
	}
}

// keys answers a D2Keys from the index.
func (n *Node) keys(env node.Env, m *wire.D2Keys) *wire.D2KeyList {
	if m.Last {
		l := &wire.D2KeyList{Unsure: !n.vouches(env, m.Lo, m.Hi)}
		if k, ok := n.idx.last(m.Lo, m.Hi); ok {
			l.Keys = []id.ID{k}
		}
		return l
	}
	max := int(min(m.Max, wire.MaxD2Keys))
	l := &wire.D2KeyList{Unsure: !n.vouches(env, m.Lo, m.Hi)}
	for _, e := range n.idx.arc(m.Lo, m.Hi) {
		if e.pointer() && !m.Pointers {
			continue // a replica that holds a pointer lacks the block
		}
		if len(l.Keys) == max {
			l.More = true
			break
		}
		l.Keys = append(l.Keys, e.key)
		l.Versions = append(l.Versions, e.version)
	}
	return l
}

// maxHandOver bounds the pointer batches one join hands over at once; the
// joiner's sync finds the rest.
const maxHandOver = 16

// handOver gives j, this node's new predecessor, pointers to the keys of
// (lo, j.Pos]: to this node, or to whoever a pointer held here names.
func (n *Node) handOver(env node.Env, j wire.D2Ref, lo id.ID) {
	batch := &wire.D2Pointers{}
	sent := 0
	flush := func() {
		if len(batch.Pointers) > 0 && sent < maxHandOver {
			n.call(env, j.Node.Addr, batch, nil)
			sent++
		}
		batch = &wire.D2Pointers{}
	}
	for _, e := range n.idx.arc(lo, j.Pos) {
		holder := e.holder
		if holder.IsZero() {
			holder = n.self
		}
		if holder.Addr == j.Node.Addr {
			continue
		}
		batch.Pointers = append(batch.Pointers, wire.D2Pointer{Key: e.key, Holder: holder, Size: uint64(e.size)})
		if len(batch.Pointers) == wire.MaxD2Pointers {
			flush()
		}
	}
	flush()
}
