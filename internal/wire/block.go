package wire

import (
	"bytes"
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
type StoreBlock struct {
	Key      id.ID
	Data     []byte
	Expiry   int64 // Unix nanoseconds
	Fragment bool
}

// FetchBlock asks a node for its copy of Key; the reply is a Block.
type FetchBlock struct{ Key id.ID }

// Block is a stored copy: a whole block or a fragment.
type Block struct {
	Key      id.ID
	Data     []byte
	Expiry   int64
	Fragment bool
}

// StatBlock asks a node what it holds under Key; the reply is a BlockInfo.
type StatBlock struct{ Key id.ID }

// BlockInfo describes one stored copy.
type BlockInfo struct {
	Key      id.ID
	Size     uint64
	Expiry   int64
	Fragment bool
}

// ClientPut asks a node to store Data in the DHT; the reply is a PutDone.
type ClientPut struct {
	Data       []byte
	Expiry     int64
	Redundancy Redundancy
}

// PutDone answers ClientPut: the block's key and the nodes that hold its
// copies durably.
type PutDone struct {
	Key     id.ID
	Holders []NodeRef
}

// ClientGet asks a node to fetch a block from the DHT; the reply is a
// Block holding the whole, verified block.
type ClientGet struct{ Key id.ID }

// ClientStat asks a node which nodes hold Key; the reply is a StatDone.
type ClientStat struct{ Key id.ID }

// Holder is one node's answer to a StatBlock.
type Holder struct {
	Node     NodeRef
	Size     uint64
	Expiry   int64
	Fragment bool
	Err      string // why the node has no usable copy
}

// StatDone answers ClientStat, nearest successor of the key first.
type StatDone struct {
	Key     id.ID
	Holders []Holder
}

func (*StoreBlock) Type() Type { return TypeStoreBlock }

// A StoreBlock has a Block's fields, numbered alike.
func (m *StoreBlock) encode(b []byte) []byte          { return (*Block)(m).encode(b) }
func (m *StoreBlock) decodeField(d *decoder, f field) { (*Block)(m).decodeField(d, f) }
func (m *StoreBlock) clone() Msg {
	c := *m
	c.Data = bytes.Clone(m.Data)
	return &c
}

func (*FetchBlock) Type() Type                        { return TypeFetchBlock }
func (m *FetchBlock) encode(b []byte) []byte          { return putID(b, 1, m.Key) }
func (m *FetchBlock) decodeField(d *decoder, f field) { m.Key = keyField(d, f, m.Key) }
func (m *FetchBlock) clone() Msg                      { return new(*m) }

func (*Block) Type() Type { return TypeBlock }
func (m *Block) encode(b []byte) []byte {
	b = putID(b, 1, m.Key)
	b = putBytes(b, 2, m.Data)
	b = putInt(b, 3, m.Expiry)
	return putBool(b, 4, m.Fragment)
}
func (m *Block) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Key = d.id(f)
	case 2:
		m.Data = d.data(f)
	case 3:
		m.Expiry = d.int(f)
	case 4:
		m.Fragment = d.bool(f)
	}
}
func (m *Block) clone() Msg {
	c := *m
	c.Data = bytes.Clone(m.Data)
	return &c
}

func (*StatBlock) Type() Type                        { return TypeStatBlock }
func (m *StatBlock) encode(b []byte) []byte          { return putID(b, 1, m.Key) }
func (m *StatBlock) decodeField(d *decoder, f field) { m.Key = keyField(d, f, m.Key) }
func (m *StatBlock) clone() Msg                      { return new(*m) }

func (*BlockInfo) Type() Type { return TypeBlockInfo }
func (m *BlockInfo) encode(b []byte) []byte {
	b = putID(b, 1, m.Key)
	b = putUint(b, 2, m.Size)
	b = putInt(b, 3, m.Expiry)
	return putBool(b, 4, m.Fragment)
}
func (m *BlockInfo) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Key = d.id(f)
	case 2:
		m.Size = d.uint(f)
	case 3:
		m.Expiry = d.int(f)
	case 4:
		m.Fragment = d.bool(f)
	}
}
func (m *BlockInfo) clone() Msg { return new(*m) }

func (*ClientPut) Type() Type { return TypeClientPut }
func (m *ClientPut) encode(b []byte) []byte {
	b = putBytes(b, 1, m.Data)
	b = putInt(b, 2, m.Expiry)
	return putUint(b, 3, uint64(m.Redundancy))
}
func (m *ClientPut) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Data = d.data(f)
	case 2:
		m.Expiry = d.int(f)
	case 3:
		m.Redundancy = Redundancy(d.uint32(f))
	}
}
func (m *ClientPut) clone() Msg {
	c := *m
	c.Data = bytes.Clone(m.Data)
	return &c
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

func (*PutDone) Type() Type { return TypePutDone }
func (m *PutDone) encode(b []byte) []byte {
	b = putID(b, 1, m.Key)
	return putNodes(b, 2, m.Holders)
}
func (m *PutDone) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Key = d.id(f)
	case 2:
		m.Holders = d.nodes(m.Holders, f)
	}
}
func (m *PutDone) clone() Msg { return &PutDone{Key: m.Key, Holders: cloneNodes(m.Holders)} }

func (*ClientGet) Type() Type                        { return TypeClientGet }
func (m *ClientGet) encode(b []byte) []byte          { return putID(b, 1, m.Key) }
func (m *ClientGet) decodeField(d *decoder, f field) { m.Key = keyField(d, f, m.Key) }
func (m *ClientGet) clone() Msg                      { return new(*m) }

func (*ClientStat) Type() Type                        { return TypeClientStat }
func (m *ClientStat) encode(b []byte) []byte          { return putID(b, 1, m.Key) }
func (m *ClientStat) decodeField(d *decoder, f field) { m.Key = keyField(d, f, m.Key) }
func (m *ClientStat) clone() Msg                      { return new(*m) }

func (*StatDone) Type() Type { return TypeStatDone }
func (m *StatDone) encode(b []byte) []byte {
	b = putID(b, 1, m.Key)
	for _, h := range m.Holders {
		b = appendTagBytes(b, 2)
		b = appendNested(b, func(b []byte) []byte {
			b = putNode(b, 1, h.Node)
			b = putUint(b, 2, h.Size)
			b = putInt(b, 3, h.Expiry)
			b = putBool(b, 4, h.Fragment)
			return putString(b, 5, h.Err)
		})
	}
	return b
}
func (m *StatDone) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		m.Key = d.id(f)
	case 2:
		if len(m.Holders) >= MaxHolders {
			d.fail("more than %d holders", MaxHolders)
			return
		}
		var h Holder
		d.nested(f, func(g field) {
			switch g.num {
			case 1:
				h.Node = d.node(g)
			case 2:
				h.Size = d.uint(g)
			case 3:
				h.Expiry = d.int(g)
			case 4:
				h.Fragment = d.bool(g)
			case 5:
				h.Err = d.str(g, MaxTextBytes)
			}
		})
		m.Holders = append(m.Holders, h)
	}
}
func (m *StatDone) clone() Msg {
	return &StatDone{Key: m.Key, Holders: append([]Holder(nil), m.Holders...)}
}

func keyField(d *decoder, f field, cur id.ID) id.ID {
	if f.num == 1 {
		return d.id(f)
	}
	return cur
}

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
	case d.owned:
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
type PutItem struct {
	Data   []byte
	Expiry int64 // Unix nanoseconds; 0 takes the node's default
	// Key, if not zero, is the data's content hash as the sender computed
	// it (the client routes by it). A node hashes the data itself and
	// fails the item if the two differ, unless the sender is in the
	// node's own process (node.MsgIn.Local), whose hash it takes as it
	// is. A block the node stores as fragments is keyed by their
	// descriptor instead, and Key goes unused.
	Key id.ID
}

// ClientPutBatch asks a node to store many blocks in the DHT at once, as
// a news front-end's burst of articles: the node runs each put as it
// would a ClientPut, and their copies reach each replica host together,
// so they share its syncs. The reply is a PutBatchDone once every put has
// ended.
type ClientPutBatch struct {
	Items      []PutItem
	Redundancy Redundancy
	// Fresh says the sender believes no host stores any of the blocks
	// yet (a news site's history has never seen the articles), so their
	// holders may write them without looking each key up first
	// (store.PutOptions.Fresh). A wrong belief costs a duplicate record
	// (dead bytes until compaction), never data: the bytes are the same,
	// and the stored object keeps the later of the two expiries. Copies
	// that leave one by one (a retry at another successor) do not carry
	// it.
	Fresh bool
}

// PutResult is one block's outcome in a PutBatchDone: its key, or the
// error code and text a ClientPut would have been answered with.
type PutResult struct {
	Key  id.ID
	Code fault.Code
	Err  string
}

// PutBatchDone answers ClientPutBatch, one result per item, in order.
type PutBatchDone struct{ Results []PutResult }

func (*ClientPutBatch) Type() Type { return TypeClientPutBatch }
func (m *ClientPutBatch) encode(b []byte) []byte {
	for _, it := range m.Items {
		b = appendTagBytes(b, 1)
		b = appendNested(b, func(b []byte) []byte {
			b = putBytes(b, 1, it.Data)
			b = putInt(b, 2, it.Expiry)
			return putID(b, 3, it.Key)
		})
	}
	b = putUint(b, 2, uint64(m.Redundancy))
	return putBool(b, 3, m.Fresh)
}
func (m *ClientPutBatch) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		if len(m.Items) >= MaxPutBatch {
			d.fail("more than %d blocks in a batch", MaxPutBatch)
			return
		}
		var it PutItem
		d.nested(f, func(g field) {
			switch g.num {
			case 1:
				it.Data = d.data(g)
			case 2:
				it.Expiry = d.int(g)
			case 3:
				it.Key = d.id(g)
			}
		})
		m.Items = append(m.Items, it)
	case 2:
		m.Redundancy = Redundancy(d.uint32(f))
	case 3:
		m.Fresh = d.bool(f)
	}
}
func (m *ClientPutBatch) clone() Msg {
	c := &ClientPutBatch{Redundancy: m.Redundancy, Fresh: m.Fresh}
	for _, it := range m.Items {
		c.Items = append(c.Items, PutItem{Data: bytes.Clone(it.Data), Expiry: it.Expiry, Key: it.Key})
	}
	return c
}

func (m *ClientPutBatch) hand() Msg {
	c := *m
	c.Items = slices.Clone(m.Items)
	for i := range c.Items {
		c.Items[i].Data = handed(c.Items[i].Data)
	}
	return &c
}

func (*PutBatchDone) Type() Type { return TypePutBatchDone }
func (m *PutBatchDone) encode(b []byte) []byte {
	for _, r := range m.Results {
		b = appendTagBytes(b, 1)
		b = appendNested(b, func(b []byte) []byte {
			b = putID(b, 1, r.Key)
			b = putUint(b, 2, uint64(r.Code))
			return putString(b, 3, r.Err)
		})
	}
	return b
}
func (m *PutBatchDone) decodeField(d *decoder, f field) {
	if f.num != 1 {
		return
	}
	if len(m.Results) >= MaxPutBatch {
		d.fail("more than %d results in a batch", MaxPutBatch)
		return
	}
	var r PutResult
	d.nested(f, func(g field) {
		switch g.num {
		case 1:
			r.Key = d.id(g)
		case 2:
			r.Code = fault.Code(d.uint32(g))
		case 3:
			r.Err = d.str(g, MaxTextBytes)
		}
	})
	m.Results = append(m.Results, r)
}
func (m *PutBatchDone) clone() Msg {
	return &PutBatchDone{Results: append([]PutResult(nil), m.Results...)}
}

// MaxStatBatch bounds the keys of one StatBlocks (and the answers of its
// BlockInfos).
const MaxStatBatch = 1024

// StatBlocks asks a node what it holds under each of Keys, as StatBlock
// does for one: a news site checking a batch of announced articles asks
// each holder once for all of its keys. The reply is a BlockInfos.
type StatBlocks struct{ Keys []id.ID }

// BlockInfos answers StatBlocks, one BlockInfo per key, in order. A key
// the node holds no readable copy of has Size 0.
type BlockInfos struct{ Infos []BlockInfo }

func (*StatBlocks) Type() Type { return TypeStatBlocks }
func (m *StatBlocks) encode(b []byte) []byte {
	for _, k := range m.Keys {
		b = putID(b, 1, k)
	}
	return b
}
func (m *StatBlocks) decodeField(d *decoder, f field) {
	if f.num != 1 {
		return
	}
	if len(m.Keys) >= MaxStatBatch {
		d.fail("more than %d keys in a batch", MaxStatBatch)
		return
	}
	m.Keys = append(m.Keys, d.id(f))
}
func (m *StatBlocks) clone() Msg { return &StatBlocks{Keys: slices.Clone(m.Keys)} }

func (*BlockInfos) Type() Type { return TypeBlockInfos }
func (m *BlockInfos) encode(b []byte) []byte {
	for i := range m.Infos {
		b = appendTagBytes(b, 1)
		b = appendNested(b, m.Infos[i].encode)
	}
	return b
}
func (m *BlockInfos) decodeField(d *decoder, f field) {
	if f.num != 1 {
		return
	}
	if len(m.Infos) >= MaxStatBatch {
		d.fail("more than %d answers in a batch", MaxStatBatch)
		return
	}
	var bi BlockInfo
	d.nested(f, func(g field) { bi.decodeField(d, g) })
	m.Infos = append(m.Infos, bi)
}
func (m *BlockInfos) clone() Msg { return &BlockInfos{Infos: slices.Clone(m.Infos)} }

// StoreBlocks asks a node to keep many copies at once, as StoreBlock does
// for one (at most MaxPutBatch of them, within the frame): the copies a
// batch of puts sends one host leave in one message, and the host writes
// them in one group commit. The reply is a StoresDone.
type StoreBlocks struct {
	Blocks []StoreBlock
	// Fresh: the batch of puts they come from was sent as
	// ClientPutBatch.Fresh, so the host may write them without looking
	// each key up first. A wrong belief costs a duplicate record, never
	// data (ClientPutBatch.Fresh).
	Fresh bool
}

// StoresDone answers StoreBlocks, one result per copy, in order: Code 0
// for a copy stored durably (Key is not used), or the error a StoreBlock
// would have been answered with.
type StoresDone struct{ Results []PutResult }

func (*StoreBlocks) Type() Type { return TypeStoreBlocks }
func (m *StoreBlocks) encode(b []byte) []byte {
	for i := range m.Blocks {
		b = appendTagBytes(b, 1)
		b = appendNested(b, m.Blocks[i].encode)
	}
	return putBool(b, 2, m.Fresh)
}
func (m *StoreBlocks) decodeField(d *decoder, f field) {
	switch f.num {
	case 1:
		if len(m.Blocks) >= MaxPutBatch {
			d.fail("more than %d blocks in a batch", MaxPutBatch)
			return
		}
		var sb StoreBlock
		d.nested(f, func(g field) { sb.decodeField(d, g) })
		m.Blocks = append(m.Blocks, sb)
	case 2:
		m.Fresh = d.bool(f)
	}
}
func (m *StoreBlocks) clone() Msg {
	c := &StoreBlocks{Blocks: slices.Clone(m.Blocks), Fresh: m.Fresh}
	for i := range c.Blocks {
		c.Blocks[i].Data = bytes.Clone(c.Blocks[i].Data)
	}
	return c
}

func (*StoresDone) Type() Type { return TypeStoresDone }
func (m *StoresDone) encode(b []byte) []byte {
	return (&PutBatchDone{Results: m.Results}).encode(b)
}
func (m *StoresDone) decodeField(d *decoder, f field) {
	p := PutBatchDone{Results: m.Results}
	p.decodeField(d, f)
	m.Results = p.Results
}
func (m *StoresDone) clone() Msg { return &StoresDone{Results: slices.Clone(m.Results)} }
