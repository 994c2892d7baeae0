package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"google.golang.org/protobuf/encoding/protowire"

	"triad/internal/fault"
	"triad/internal/id"
)

// Version is the envelope format version. A frame of another version is
// refused: peers must run compatible releases. Version 2 renumbered the
// message types into per-protocol ranges.
const Version = 2

// Limits on what a decoder accepts. They bound memory per frame and are
// checked before allocation.
const (
	MaxFrameBytes = 4 << 20 // whole frame; blocks of later issues fit well under it
	MaxAddrBytes  = 255     // host:port
	MaxListLen    = 64      // nodes in any list (successors, fingers...)
	MaxTextBytes  = 1024    // error texts
	MaxFingers    = 8 * id.MaxBytes
	MaxVnodes     = 256
)

// Errors returned by the codec, besides fault.ErrTooLarge for a frame over its
// limit.
var (
	ErrMalformed = errors.New("wire: malformed message")
	ErrVersion   = errors.New("wire: unsupported version")
	ErrType      = errors.New("wire: unknown message type")
)

// Kind says whether an envelope is a request (expects a reply with the same
// ReqID), a reply, or a one-way message.
type Kind uint8

// Envelope kinds.
const (
	OneWay Kind = iota
	Request
	Reply
)

// NodeRef names one virtual server: its ring ID, the listen address of
// the process that hosts it, and the machine that process runs on.
type NodeRef struct {
	ID   id.ID  `wire:"1"`
	Addr string `wire:"2,max=MaxAddrBytes"`
	// Machine identifies the machine (the disk) the process stores on: a
	// random number made once and kept in its data folder, or one an
	// operator gives processes that share a machine. Replicas go on
	// distinct machines. Zero means unknown: only the address tells hosts
	// apart.
	Machine uint64 `wire:"3"`
}

// SameMachine reports whether n and m are known to store on one machine:
// one process, or one machine identity.
func (n NodeRef) SameMachine(m NodeRef) bool {
	return n.Addr == m.Addr || n.Machine != 0 && n.Machine == m.Machine
}

// IsZero reports whether n names no node.
func (n NodeRef) IsZero() bool { return n.ID.IsZero() }

// String is "id@addr" with a short ID, for logs.
func (n NodeRef) String() string {
	if n.IsZero() {
		return "<none>"
	}
	return n.ID.Short() + "@" + n.Addr
}

// Envelope is the unit sent between processes: a message with its routing
// header. To names the destination virtual server; the zero ID means "any
// virtual server of that process" (used by clients and joining nodes, which
// know an address but not an ID).
type Envelope struct {
	Kind  Kind
	ReqID uint64
	From  NodeRef
	To    id.ID
	Msg   Msg
	// Coord is the sender's Vivaldi coordinate; nodes set it on replies.
	Coord Coord
}

// Msg is one typed message. The set is closed: every Msg is defined in this
// package, so the codec knows them all.
type Msg interface {
	Type() Type
	encode(b []byte) []byte
	decodeField(d *decoder, f field)
	// clone is Clone for this type: new(*m) for a message that holds no
	// slices, a copy of each slice for the rest.
	clone() Msg
}

// Envelope field numbers.
const (
	envVersion protowire.Number = 1 + iota
	envKind
	envReqID
	envFrom
	envTo
	envType
	envBody
	envCoord
)

// Encode appends the encoding of e to dst and returns the result.
func Encode(dst []byte, e Envelope) []byte {
	b := putUint(dst, envVersion, Version)
	b = putUint(b, envKind, uint64(e.Kind))
	b = putUint(b, envReqID, e.ReqID)
	b = putNode(b, envFrom, e.From)
	b = putID(b, envTo, e.To)
	b = putUint(b, envType, uint64(e.Msg.Type()))
	b = putCoord(b, envCoord, e.Coord)
	b = protowire.AppendTag(b, envBody, protowire.BytesType)
	return appendNested(b, e.Msg.encode)
}

// Size is the encoded size of e in bytes. The simulator charges every
// message its size, so the common messages are measured without being
// encoded (TestSize holds this to len(Encode)); the rest are encoded.
func Size(e Envelope) int {
	n := sizeUint(envVersion, Version) + sizeUint(envKind, uint64(e.Kind)) + sizeUint(envReqID, e.ReqID) +
		sizeNode(envFrom, e.From) + sizeID(envTo, e.To) + sizeUint(envType, uint64(e.Msg.Type())) +
		sizeCoord(envCoord, e.Coord)
	return n + protowire.SizeTag(envBody) + protowire.SizeBytes(bodySize(e.Msg))
}

func bodySize(m Msg) int {
	switch m := m.(type) {
	case *Ping, *Ack, *Stabilize, *GetNeighbors, *GetRingInfo:
		return 0
	case *Error:
		return sizeUint(1, uint64(m.Code)) + sizeString(2, m.Text)
	case *Challenge:
		return sizeUint(1, m.Nonce)
	case *Proof:
		return sizeUint(1, m.Nonce)
	case *Neighbors:
		return sizeNodes(1, m.Preds) + sizeNodes(2, m.Succs)
	case *Leave:
		return sizeNodes(1, m.Preds) + sizeNodes(2, m.Succs)
	case *Lookup:
		return sizeUint(1, m.LookupID) + sizeID(2, m.Key) + sizeNode(3, m.Origin) +
			sizeUint(4, uint64(m.MinSuccs)) + sizeUint(5, uint64(m.Hops))
	case *LookupDone:
		return sizeUint(1, m.LookupID) + sizeID(2, m.Key) + sizeUint(3, uint64(m.Hops)) +
			sizeNode(4, m.Pred) + sizeNodes(5, m.Succs) + sizeString(6, m.Failed)
	case *NextHop:
		return sizeID(1, m.Key) + sizeUint(2, uint64(m.MinSuccs))
	case *NextHopInfo:
		return sizeUint(1, protowire.EncodeBool(m.Done)) + sizeNodes(2, m.Succs) + sizeNodes(3, m.Next)
	case *StoreBlock:
		return bodySize((*Block)(m))
	case *CCRequest:
		return sizeUint(1, m.Seq) + sizeID(2, m.Key) + sizeNode(3, m.Source) + sizeUint(4, m.Rate) +
			sizeUint(5, protowire.EncodeBool(m.Marked)) + sizeUint(6, uint64(m.Hops)) + sizeLen(7, len(m.Payload))
	case *Block:
		return sizeID(1, m.Key) + sizeLen(2, len(m.Data)) +
			sizeUint(3, protowire.EncodeZigZag(m.Expiry)) + sizeUint(4, protowire.EncodeBool(m.Fragment))
	case *ClientPut:
		return sizeLen(1, len(m.Data)) + sizeUint(2, protowire.EncodeZigZag(m.Expiry)) +
			sizeUint(3, uint64(m.Redundancy))
	case *StoreBlocks:
		n := sizeUint(2, protowire.EncodeBool(m.Fresh))
		for i := range m.Blocks {
			n += protowire.SizeTag(1) + protowire.SizeBytes(bodySize((*Block)(&m.Blocks[i])))
		}
		return n
	case *ClientPutBatch:
		n := sizeUint(2, uint64(m.Redundancy)) + sizeUint(3, protowire.EncodeBool(m.Fresh))
		for _, it := range m.Items {
			item := sizeLen(1, len(it.Data)) + sizeUint(2, protowire.EncodeZigZag(it.Expiry)) + sizeID(3, it.Key)
			n += protowire.SizeTag(1) + protowire.SizeBytes(item)
		}
		return n
	}
	return len(m.encode(nil))
}

// Decode parses one envelope. It never panics and allocates only in
// proportion to len(b). Data fields are copied, so b may be reused.
func Decode(b []byte) (Envelope, error) { return decode(b, false, 0) }

// DecodeOwned is Decode for a caller that hands b over for good: data
// fields point into b rather than being copied, which saves a copy of
// every large block a client receives.
func DecodeOwned(b []byte) (Envelope, error) { return decode(b, true, 0) }

// DecodeBulk is Decode for a caller that gives b up once it returns (a
// frame buffer too large to keep for the next frame), for the copies a
// holder is sent to store (StoreBlock, StoreBlocks): a block of BulkMin
// bytes or more points into b rather than being copied. Those blocks are
// written and answered together, so none keeps the frame alive past the
// others. Smaller blocks, and every other message, are copied, as Decode
// copies them; so is a frame whose large blocks are less than half of it
// (padded with fields nobody reads), so that what a node keeps is at most
// twice the blocks it was sent. A frame of articles (StoreBlocks of 240 KB
// copies) is then read with no copy of them.
func DecodeBulk(b []byte) (Envelope, error) {
	e, aliased, err := decodeCounting(b, true, BulkMin)
	if err == nil && aliased > 0 && 2*aliased < len(b) {
		return Decode(b) // the rare padded frame: decoded again, copying
	}
	return e, err // nothing aliased is Decode's result already
}

// BulkMin is the least data field that DecodeBulk leaves in its frame.
const BulkMin = 16 << 10

// bulkType reports the messages whose blocks DecodeBulk may leave in the
// frame.
func bulkType(t Type) bool { return t == TypeStoreBlock || t == TypeStoreBlocks }

func decode(b []byte, owned bool, aliasMin int) (Envelope, error) {
	e, _, err := decodeCounting(b, owned, aliasMin)
	return e, err
}

// decodeCounting is decode, and how many bytes of data fields alias b.
// With aliasMin > 0 only a bulkType's fields may.
func decodeCounting(b []byte, owned bool, aliasMin int) (Envelope, int, error) {
	if len(b) > MaxFrameBytes {
		return Envelope{}, 0, fmt.Errorf("%w: frame of %d bytes", fault.ErrTooLarge, len(b))
	}
	var (
		e       Envelope
		d       = decoder{owned: owned, aliasMin: aliasMin}
		version uint64
		typ     Type
		body    []byte
		hasBody bool
	)
	d.each(b, func(f field) {
		switch f.num {
		case envVersion:
			version = d.uint(f)
		case envKind:
			k := d.uint(f)
			if k > uint64(Reply) {
				d.fail("kind %d", k)
			}
			e.Kind = Kind(k)
		case envReqID:
			e.ReqID = d.uint(f)
		case envFrom:
			e.From = d.sender(f)
		case envTo:
			e.To = d.id(f)
		case envType:
			typ = Type(d.uint(f))
		case envBody:
			body, hasBody = d.bytes(f), true
		case envCoord:
			e.Coord = d.coord(f)
		}
	})
	if d.err != nil {
		return Envelope{}, 0, d.err
	}
	if version != Version {
		return Envelope{}, 0, fmt.Errorf("%w: %d", ErrVersion, version)
	}
	m := newMsg(typ)
	if m == nil {
		return Envelope{}, 0, fmt.Errorf("%w: %d", ErrType, typ)
	}
	if !hasBody {
		return Envelope{}, 0, fmt.Errorf("%w: no body", ErrMalformed)
	}
	if aliasMin > 0 && !bulkType(typ) {
		d.owned = false
	}
	d.each(body, func(f field) { m.decodeField(&d, f) })
	if d.err != nil {
		return Envelope{}, 0, d.err
	}
	e.Msg = m
	return e, d.aliased, nil
}

// WriteFrame writes the length-prefixed encoding of e to w.
func WriteFrame(w io.Writer, e Envelope) error {
	b := AppendFrame(nil, e)
	_, err := w.Write(b)
	return err
}

// AppendFrame appends the length-prefixed encoding of e to dst.
func AppendFrame(dst []byte, e Envelope) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0)
	dst = Encode(dst, e)
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return dst
}

// ReadFrame reads one length-prefixed frame from r into buf (grown as
// needed) and returns the payload. A length above max is refused before any
// allocation.
func ReadFrame(r io.Reader, buf []byte, max int) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if int64(n) > int64(max) {
		return nil, fmt.Errorf("%w: %d bytes", fault.ErrTooLarge, n)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return buf, nil
}

// Clone returns a deep copy of m, so that a receiver may keep or change
// what it got without touching the sender's state. The simulator uses it
// instead of a decode on its hot path, so it must give what the codec
// gives: TestCloneIsTheCodec fills every field of every message type and
// compares Clone with Decode(Encode(m)).
func Clone(m Msg) Msg { return m.clone() }

// Hand is Clone for a message whose sender hands over the blocks it
// carries: the copy shares their bytes (ClientPut's Data, ClientPutBatch's
// items' Data) and copies the rest; any other message is cloned. It is for
// a sender in the receiver's own process that neither changes nor reuses
// those bytes once sent (tcp.Local), where a copy of each block would cost
// a memmove and a new allocation of its size.
func Hand(m Msg) Msg {
	if h, ok := m.(handOver); ok {
		return h.hand()
	}
	return m.clone()
}

// handOver is a message whose block bytes Hand shares.
type handOver interface{ hand() Msg }
