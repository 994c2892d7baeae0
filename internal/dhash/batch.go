package dhash

import (
	"fmt"
	"time"

	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/rpc"
	"triad/internal/store"
	"triad/internal/wire"
)

// A storeGather collects the copies the puts of one ClientPutBatch send
// to other hosts, so that each host gets them in one StoreBlocks: one
// message, one reply and one group commit per host and batch rather than
// one per copy (DHash++'s client batches, carried through to the hosts).
type storeGather struct {
	hosts []gatherHost // in the order first sent to, for a replayable run
	fresh bool         // the batch's puts are of blocks no host has (putHint)
}

type gatherHost struct {
	to     wire.NodeRef
	blocks []wire.StoreBlock
	dones  []func(env node.Env, err error)
	bytes  int // the blocks' data
	frame  int // an upper bound of the StoreBlocks' encoded size
}

// add queues a copy for c; done runs once c has answered for it.
func (g *storeGather) add(c wire.NodeRef, m *wire.StoreBlock, done func(env node.Env, err error)) {
	size := len(m.Data) + storeBlockOverhead
	for i := range g.hosts {
		h := &g.hosts[i]
		if h.to.Addr == c.Addr && len(h.blocks) < wire.MaxPutBatch && h.frame+size <= maxStoreBatchFrame {
			h.blocks = append(h.blocks, *m)
			h.dones = append(h.dones, done)
			h.bytes += len(m.Data)
			h.frame += size
			return
		}
	}
	g.hosts = append(g.hosts, gatherHost{to: c, blocks: []wire.StoreBlock{*m}, dones: []func(node.Env, error){done}, bytes: len(m.Data), frame: size})
}

// A StoreBlocks is cut so that its frame fits: each block costs its data
// and at most storeBlockOverhead bytes of key, expiry, flag and tags, and
// the envelope (addresses, IDs, coordinates) takes less than the margin
// the frame keeps.
const (
	storeBlockOverhead = 64
	maxStoreBatchFrame = wire.MaxFrameBytes - 64<<10
)

// flush sends each host its copies: a StoreBlocks, or a StoreBlock for a
// lone copy unless the batch is fresh (a StoreBlock cannot say so).
func (n *Node) flush(env node.Env, g *storeGather) {
	for _, h := range g.hosts {
		timeout := n.rt.RPC().Timeout(h.to.Addr) + uplinkTime(h.bytes)
		if len(h.blocks) == 1 && !g.fresh {
			if !n.transfer(env, h.to, &h.blocks[0], timeout, func(env node.Env, _ wire.Msg, err error) { h.dones[0](env, err) }) {
				h.dones[0](env, errTooManyCalls)
			}
			continue
		}
		ok := n.transfer(env, h.to, &wire.StoreBlocks{Blocks: h.blocks, Fresh: g.fresh}, timeout, func(env node.Env, r wire.Msg, err error) {
			done, isDone := r.(*wire.StoresDone)
			if err == nil && (!isDone || len(done.Results) != len(h.blocks)) {
				err = &wire.Error{Code: fault.CodeBadRequest, Text: fmt.Sprintf("%s answered %d copies with %T", h.to.Addr, len(h.blocks), r)}
			}
			for i, cont := range h.dones {
				switch {
				case err != nil:
					cont(env, err)
				case done.Results[i].Code != 0:
					cont(env, &wire.Error{Code: done.Results[i].Code, Text: done.Results[i].Err})
				default:
					cont(env, nil)
				}
			}
		})
		if !ok {
			for _, cont := range h.dones {
				cont(env, errTooManyCalls)
			}
		}
	}
}

var errTooManyCalls = fmt.Errorf("%w: too many calls in flight", fault.ErrBusy)

// serveStores keeps many copies for a putting node, each checked as
// serveStore checks one, written together and answered in one StoresDone
// once the engine's group commit has made them durable.
func (n *Node) serveStores(env node.Env, in node.MsgIn, m *wire.StoreBlocks) {
	me := n.self()
	results := make([]wire.PutResult, len(m.Blocks))
	w := &engineWork{op: opPutMany}
	var at []int // the blocks of w, by index in m
	for i := range m.Blocks {
		b := &m.Blocks[i]
		err := n.storable(b)
		if err == nil && b.Fragment {
			err = n.coder.checkFragment(b.Key, b.Data, n.cfg.MaxBlock)
		}
		if err != nil {
			results[i] = wire.PutResult{Code: fault.CodeOf(err), Err: err.Error()}
			n.Stats.StoreRefused++
			continue
		}
		w.puts = append(w.puts, enginePut{key: b.Key, data: b.Data, expiry: time.Unix(0, b.Expiry), opt: store.PutOptions{Opaque: b.Fragment, Fresh: m.Fresh, NoWait: n.cfg.AckWritten}})
		at = append(at, i)
		n.storing++
	}
	if len(at) == 0 {
		rpc.Respond(env, in, me, &wire.StoresDone{Results: results})
		return
	}
	w.done = func(env node.Env, val any, _ error) {
		n.storing -= len(at)
		for j, err := range val.([]error) {
			i := at[j]
			if err != nil {
				n.Stats.StoreRefused++
				results[i] = wire.PutResult{Code: fault.CodeOf(err), Err: err.Error()}
				continue
			}
			n.Stats.Stored++
		}
		rpc.Respond(env, in, me, &wire.StoresDone{Results: results})
	}
	env.Offload(w)
}

// storable checks a copy sent to be kept here, before it is written: a
// ring key, data within the limits, and room in the store window (a
// fragment's header is checked as it is written, writeCopy).
func (n *Node) storable(b *wire.StoreBlock) error {
	limit := n.cfg.MaxBlock
	if b.Fragment {
		limit += n.coder.header()
	}
	switch {
	case b.Key.Width() != id.Bytes:
		return fmt.Errorf("%w: key must be %d bits", fault.ErrBadRequest, id.Bits)
	case len(b.Data) == 0:
		return ErrEmpty
	case len(b.Data) > limit:
		return fmt.Errorf("%w: %d bytes, limit %d", fault.ErrTooLarge, len(b.Data), limit)
	case n.storing >= n.cfg.StoreWindow:
		return fmt.Errorf("%w: %d copies being written", fault.ErrBusy, n.storing)
	}
	return nil
}

// enginePut is one copy of an opPutMany.
type enginePut struct {
	key    id.ID
	data   []byte
	expiry time.Time
	opt    store.PutOptions
}

// asyncPutter is an engine that writes a copy and lets the caller wait
// for its durability later (disk.Disk), so that many copies share one
// group commit.
type asyncPutter interface {
	PutAsync(key id.ID, data []byte, expiry time.Time, opt store.PutOptions) (durable func() error, err error)
}

// putMany writes puts and waits until they are durable (unless NoWait):
// written one after another, then waited for together where the engine
// allows.
func putMany(e store.Engine, puts []enginePut) []error {
	errs := make([]error, len(puts))
	a, async := e.(asyncPutter)
	if !async {
		for i, p := range puts {
			errs[i] = e.Put(p.key, p.data, p.expiry, p.opt)
		}
		return errs
	}
	durable := make([]func() error, len(puts))
	for i, p := range puts {
		durable[i], errs[i] = a.PutAsync(p.key, p.data, p.expiry, p.opt)
	}
	for i, wait := range durable {
		if errs[i] == nil && !puts[i].opt.NoWait {
			errs[i] = wait()
		}
	}
	return errs
}
