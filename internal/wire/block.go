package wire

import (
	"encoding/binary"
	"math"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"

	"triad/internal/fault"
	"triad/internal/id"
)

// Block-store messages (DHash). Data fields are copied out of the frame on
// decode (but for DecodeOwned), so a node may keep a block after the driver
// reuses its buffer.

// MaxHolders bounds the holder list of a StatDone (every fragment holder
// of a 7-of-14 block fits, with room for stray copies).
const MaxHolders = MaxListLen

// Redundancy chooses how a block is stored.
type Redundancy uint32

// Redundancy modes. RedundancyDefault takes the deployment's setting.
const (
	RedundancyDefault Redundancy = iota
	RedundancyReplicas
	RedundancyFragments
)

// StoreBlock asks a node to keep a whole block (Fragment false: Key must be
// the content hash of Data) or one erasure-coded fragment of it. The reply
// is an Ack once the copy is durable.
//
//wire:msg 64 node
type StoreBlock struct {
	Key      id.ID  `wire:"1"`
	Data     []byte `wire:"2"`
	Expiry   int64  `wire:"3"` // Unix nanoseconds
	Fragment bool   `wire:"4"`
}

// FetchBlock asks a node for its copy of Key; the reply is a Block.
//
//wire:msg 65 node big
type FetchBlock struct {
	Key id.ID `wire:"1"`
}

// Block is a stored copy: a whole block or a fragment.
//
//wire:msg 66 node
type Block struct {
	Key      id.ID  `wire:"1"`
	Data     []byte `wire:"2"`
	Expiry   int64  `wire:"3"`
	Fragment bool   `wire:"4"`
}

// StatBlock asks a node what it holds under Key; the reply is a BlockInfo.
//
//wire:msg 67 client
type StatBlock struct {
	Key id.ID `wire:"1"`
}

// BlockInfo describes one stored copy.
//
//wire:msg 68 node
type BlockInfo struct {
	Key      id.ID  `wire:"1"`
	Size     uint64 `wire:"2"`
	Expiry   int64  `wire:"3"`
	Fragment bool   `wire:"4"`
}

// ClientPut asks a node to store Data in the DHT; the reply is a PutDone.
//
//wire:msg 69 client
type ClientPut struct {
	Data       []byte     `wire:"1"`
	Expiry     int64      `wire:"2"`
	Redundancy Redundancy `wire:"3"`
}

// PutDone answers ClientPut: the block's key and the nodes that hold its
// copies durably.
//
//wire:msg 70 node
type PutDone struct {
	Key     id.ID     `wire:"1"`
	Holders []NodeRef `wire:"2"`
}

// ClientGet asks a node to fetch a block from the DHT; the reply is a
// Block holding the whole, verified block.
//
//wire:msg 71 client big
type ClientGet struct {
	Key id.ID `wire:"1"`
}

// ClientStat asks a node which nodes hold Key; the reply is a StatDone.
//
//wire:msg 72 client
type ClientStat struct {
	Key id.ID `wire:"1"`
}

// Holder is one node's answer to a StatBlock.
//
//wire:struct
type Holder struct {
	Node     NodeRef `wire:"1"`
	Size     uint64  `wire:"2"`
	Expiry   int64   `wire:"3"`
	Fragment bool    `wire:"4"`
	Err      string  `wire:"5"` // why the node has no usable copy
}

// StatDone answers ClientStat, nearest successor of the key first.
//
//wire:msg 73 node
type StatDone struct {
	Key     id.ID    `wire:"1"`
	Holders []Holder `wire:"2,max=MaxHolders"`
}

func (m *ClientPut) hand() Msg {
	c := *m
	c.Data = handed(m.Data)
	return &c
}

// handed is a block's bytes as Hand shares them: without the spare
// capacity past them, so that neither side can append into the other's
// memory (Reed-Solomon's Split, for one, lays its shards out there).
func handed(b []byte) []byte { return b[:len(b):len(b)] }

// putInt encodes a signed value (times) with zig-zag, as protobuf's sint64.
func putInt(b []byte, num protowire.Number, v int64) []byte {
	return putUint(b, num, protowire.EncodeZigZag(v))
}

func (d *decoder) int(f field) int64 { return protowire.DecodeZigZag(d.uint(f)) }

func putBytes(b []byte, num protowire.Number, v []byte) []byte {
	if len(v) == 0 {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

// data copies a payload out of the frame, which the driver reuses.
func (d *decoder) data(f field) []byte {
	b := d.bytes(f)
	switch {
	case len(b) == 0:
		return nil
	case d.owned && len(b) >= d.aliasMin:
		d.aliased += len(b)
		return b[:len(b):len(b)]
	}
	return append([]byte(nil), b...)
}

// Coord is a Vivaldi network coordinate: a 2-D position and a height (the
// access link), all in milliseconds, and the node's own error estimate.
// Replies carry their sender's coordinate so that every round trip trains
// the caller's.
type Coord struct {
	X, Y, Height, Error float64
}

// IsZero reports an absent coordinate.
func (c Coord) IsZero() bool { return c == Coord{} }

// coordBytes is the encoded size: four little-endian float64s.
const coordBytes = 32

func putCoord(b []byte, num protowire.Number, c Coord) []byte {
	if c.IsZero() {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	b = protowire.AppendVarint(b, coordBytes)
	for _, v := range [...]float64{c.X, c.Y, c.Height, c.Error} {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

// coord decodes a coordinate; values that are not finite are refused, so a
// peer can never poison a node's coordinate with NaN.
func (d *decoder) coord(f field) Coord {
	b := d.bytes(f)
	if len(b) != coordBytes {
		d.fail("field %d: coordinate of %d bytes", f.num, len(b))
		return Coord{}
	}
	var v [4]float64
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		if math.IsNaN(v[i]) || math.IsInf(v[i], 0) || math.Abs(v[i]) > 1e7 {
			d.fail("field %d: coordinate value %v", f.num, v[i])
			return Coord{}
		}
	}
	return Coord{X: v[0], Y: v[1], Height: v[2], Error: v[3]}
}

// MaxPutBatch bounds the blocks of one ClientPutBatch (and the results of
// its PutBatchDone); the frame bounds their bytes.
const MaxPutBatch = 1024

// PutItem is one block of a ClientPutBatch.
//
//wire:struct
type PutItem struct {
	Data   []byte `wire:"1"`
	Expiry int64  `wire:"2"` // Unix nanoseconds; 0 takes the node's default
	// Key, if not zero, is the data's content hash as the sender computed
	// it (the client routes by it). A node hashes the data itself and
	// fails the item if the two differ, unless the sender is in the
	// node's own process (node.MsgIn.Local), whose hash it takes as it
	// is. A block the node stores as fragments is keyed by their
	// descriptor instead, and Key goes unused.
	Key id.ID `wire:"3"`
}

// ClientPutBatch asks a node to store many blocks in the DHT at once, as
// a news front-end's burst of articles: the node runs each put as it
// would a ClientPut, and their copies reach each replica host together,
// so they share its syncs. The reply is a PutBatchDone once every put has
// ended.
//
//wire:msg 74 client
type ClientPutBatch struct {
	Items      []PutItem  `wire:"1,max=MaxPutBatch"`
	Redundancy Redundancy `wire:"2"`
	// Fresh says the sender believes no host stores any of the blocks
	// yet (a news site's history has never seen the articles), so their
	// holders may write them without looking each key up first
	// (store.PutOptions.Fresh). A wrong belief costs a duplicate record
	// (dead bytes until compaction), never data: the bytes are the same,
	// and the stored object keeps the later of the two expiries. Copies
	// that leave one by one (a retry at another successor) do not carry
	// it.
	Fresh bool `wire:"3"`
}

// PutResult is one block's outcome in a PutBatchDone: its key, or the
// error code and text a ClientPut would have been answered with.
//
//wire:struct
type PutResult struct {
	Key  id.ID      `wire:"1"`
	Code fault.Code `wire:"2"`
	Err  string     `wire:"3"`
}

// PutBatchDone answers ClientPutBatch, one result per item, in order.
//
//wire:msg 75 node
type PutBatchDone struct {
	Results []PutResult `wire:"1,max=MaxPutBatch"`
}

func (m *ClientPutBatch) hand() Msg {
	c := *m
	c.Items = slices.Clone(m.Items)
	for i := range c.Items {
		c.Items[i].Data = handed(c.Items[i].Data)
	}
	return &c
}

// MaxStatBatch bounds the keys of one StatBlocks (and the answers of its
// BlockInfos).
const MaxStatBatch = 1024

// StatBlocks asks a node what it holds under each of Keys, as StatBlock
// does for one: a news site checking a batch of announced articles asks
// each holder once for all of its keys. The reply is a BlockInfos.
//
//wire:msg 76 client
type StatBlocks struct {
	Keys []id.ID `wire:"1,max=MaxStatBatch"`
}

// BlockInfos answers StatBlocks, one BlockInfo per key, in order. A key
// the node holds no readable copy of has Size 0.
//
//wire:msg 77 node
type BlockInfos struct {
	Infos []BlockInfo `wire:"1,max=MaxStatBatch"`
}

// StoreBlocks asks a node to keep many copies at once, as StoreBlock does
// for one (at most MaxPutBatch of them, within the frame): the copies a
// batch of puts sends one host leave in one message, and the host writes
// them in one group commit. The reply is a StoresDone.
//
//wire:msg 78 node
type StoreBlocks struct {
	Blocks []StoreBlock `wire:"1,max=MaxPutBatch"`
	// Fresh: the batch of puts they come from was sent as
	// ClientPutBatch.Fresh, so the host may write them without looking
	// each key up first. A wrong belief costs a duplicate record, never
	// data (ClientPutBatch.Fresh).
	Fresh bool `wire:"2"`
}

// StoresDone answers StoreBlocks, one result per copy, in order: Code 0
// for a copy stored durably (Key is not used), or the error a StoreBlock
// would have been answered with.
//
//wire:msg 79 node
type StoresDone struct {
	Results []PutResult `wire:"1,max=MaxPutBatch"`
}
