package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"triad/internal/fault"
	"triad/internal/id"
)

func sampleNode(r *rand.Rand) NodeRef {
	return NodeRef{ID: id.Random(r, id.Bytes), Addr: "127.0.0.1:4000"}
}

func sampleNodes(r *rand.Rand, n int) []NodeRef {
	var out []NodeRef
	for i := 0; i < n; i++ {
		out = append(out, sampleNode(r))
	}
	return out
}

// samples holds values of every message type: those written out below,
// and one filled at random (fill) per entry of the types table, so that a
// new message has its round trip and its fuzz corpus entry with nothing
// to add here.
func samples(tb testing.TB) []Msg {
	r := rand.New(rand.NewPCG(3, 4))
	k := id.Random(r, id.Bytes)
	out := []Msg{
		&Ping{}, &Ack{}, &Challenge{Nonce: 1<<63 + 5}, &Proof{Nonce: 7}, &Stabilize{}, &GetNeighbors{}, &GetRingInfo{},
		&Error{Code: fault.CodeNoVnode, Text: "no such vnode"},
		&Neighbors{Preds: sampleNodes(r, 3), Succs: sampleNodes(r, 16)},
		&Leave{Preds: sampleNodes(r, 2), Succs: sampleNodes(r, 1)},
		&Lookup{LookupID: 1 << 40, Key: k, Origin: sampleNode(r), MinSuccs: 3, Hops: 4},
		&LookupDone{LookupID: 9, Key: k, Hops: 5, Pred: sampleNode(r), Succs: sampleNodes(r, 4), Failed: "x"},
		&NextHop{Key: k, MinSuccs: 1},
		&GetMaintStatus{}, &MaintControl{Pause: true}, &Audit{Key: k, Nonce: make([]byte, AuditNonceBytes)}, &AuditProof{Held: true, Hash: make([]byte, AuditHashBytes)},
		&CCRequest{Seq: 1 << 50, Key: k, Source: sampleNode(r), Rate: 65000, Marked: true, Hops: 3, Payload: []byte("routed")},
		&CCAck{Seq: 9, Marked: true, Hops: 4}, &CCPause{Paused: true}, &CCFlood{MilliRate: 250000},
		&MaintStatus{Paused: true, Counters: []Counter{{"repaired", 7}}, Vnodes: []MaintVnode{{Self: sampleNode(r), Succ: sampleNode(r), LastRound: -5, Running: true, Queued: 3, QueuedSize: 24000}}},
		&TreeQuery{Prefix: []byte{2, 0xab}, Lo: k, Hi: id.Random(r, id.Bytes)},
		&TreeInfo{Count: 70, Hash: make([]byte, TreeHashBytes), Keys: []id.ID{k, k}, Expiries: []int64{0, 1700000000123456789}, Sizes: []uint64{0, 65536}, Children: []TreeChild{{Prefix: []byte{1, 4}, Count: 3, Hash: make([]byte, TreeHashBytes)}}},
		&NextHopInfo{Done: true, Succs: sampleNodes(r, 2), Next: sampleNodes(r, 3)},
		&ClientLookup{Key: id.Random(r, 64)},
		&RingInfo{Vnodes: []VnodeInfo{{
			Self: sampleNode(r), Preds: sampleNodes(r, 2), Succs: sampleNodes(r, 2),
			Fingers: []Finger{{Bit: 0, Node: sampleNode(r)}, {Bit: 159, Node: sampleNode(r)}},
		}, {Self: sampleNode(r)}}},
		&StoreBlock{Key: k, Data: []byte("block"), Expiry: 1 << 60, Fragment: true},
		&FetchBlock{Key: k},
		&Block{Key: k, Data: []byte("data"), Expiry: -5},
		&StatBlock{Key: k},
		&BlockInfo{Key: k, Size: 1 << 20, Expiry: 77, Fragment: true},
		&ClientPut{Data: []byte("x"), Expiry: 9, Redundancy: RedundancyFragments},
		&PutDone{Key: k, Holders: sampleNodes(r, 2)},
		&ClientGet{Key: k},
		&ClientStat{Key: k},
		&StatDone{Key: k, Holders: []Holder{{Node: sampleNode(r), Size: 3, Expiry: 4, Fragment: true}, {Node: sampleNode(r), Err: "not found"}}},
		&ClientPutBatch{Items: []PutItem{{Data: []byte("one"), Expiry: 5}, {Data: []byte("two")}}, Redundancy: RedundancyReplicas},
		&PutBatchDone{Results: []PutResult{{Key: k}, {Code: fault.CodeBusy, Err: "window full"}}},
		&StatBlocks{Keys: []id.ID{k, id.Random(r, id.Bytes)}},
		&BlockInfos{Infos: []BlockInfo{{Key: k, Size: 2450, Expiry: 1 << 60}, {Key: k}}},
		&StoreBlocks{Blocks: []StoreBlock{{Key: k, Data: []byte("one"), Expiry: 1 << 60}, {Key: k, Data: []byte("two"), Fragment: true}}},
		&StoresDone{Results: []PutResult{{}, {Code: fault.CodeBusy, Err: "copies being written"}}},
		&TapRoute{Op: TapToObject, Key: k, App: 7, Exact: true, Upcall: true, Origin: sampleNode(r), Seq: 1 << 45, Level: 3, Hops: 4,
			Exclude: sampleNodes(r, 2), Path: sampleNodes(r, 4), Payload: []byte("routed")},
		&TapRouteDone{Seq: 5, Key: k, Status: TapNotFound, Node: sampleNode(r), Root: sampleNode(r), Servers: sampleNodes(r, 3), Hops: 6, Path: sampleNodes(r, 6), Payload: []byte("obj")},
		&TapPointers{Pointers: []TapPointer{{Key: k, App: 1, Server: sampleNode(r), Level: 2, Hops: 2, TTLMillis: 600000, Remove: true, Extra: true}, {Key: k, Server: sampleNode(r)}}},
		&TapMulticast{Joiner: sampleNode(r), Prefix: 2, Level: 3, Others: sampleNodes(r, 2)},
		&TapNodes{Nodes: sampleNodes(r, 5), Truncated: true}, &TapNearby{Level: 39}, &TapNotify{Kind: TapHello, Level: 4},
		&TapJoined{Prefix: 1, Nodes: sampleNodes(r, 3)}, &TapLeave{Replacements: sampleNodes(r, 3)}, &TapGetTable{},
		&TapTable{Self: sampleNode(r), Joined: true, Entries: []TapEntry{{Level: 0, Digit: 15, Links: sampleNodes(r, 3), RTTMicros: []uint64{0, 1200, 99000}}},
			Backpointers: sampleNodes(r, 2), Counters: []Counter{{"pointers", 12}}},
		&TapPublish{Data: []byte("object"), TTLMillis: 3600000, App: 1}, &TapPublishDone{Key: k}, &TapUnpublish{Key: k}, &TapCheckServed{Keys: []id.ID{k, k}}, &TapServed{Keys: []id.ID{k}},
		&TapLocate{Key: k, All: true, Fetch: true, App: 1},
		&TapBench{Key: k, Count: 10000, Size: 4096, Window: 64}, &TapBenchDone{Acked: 9, Failed: 1, Micros: 5, P50Micros: 2, P90Micros: 3},
		&TapLocateDone{Found: true, Servers: sampleNodes(r, 2), Root: sampleNode(r), Hops: 3, Path: sampleNodes(r, 3), Micros: 1234, Data: []byte("object")},
		&D2Join{Self: D2Ref{Node: sampleNode(r), Pos: id.Random(r, 64)}}, &D2GetNeighbors{},
		&D2Neighbors{Self: D2Ref{Node: sampleNode(r), Pos: id.Random(r, 64)}, Preds: []D2Ref{{Node: sampleNode(r), Pos: id.Random(r, 64)}},
			Succs: []D2Ref{{Node: sampleNode(r), Pos: id.Random(r, 64)}, {Node: sampleNode(r), Pos: id.Random(r, 64)}}, Load: 12, Median: id.Random(r, 64)},
		&D2FindSucc{Key: id.Random(r, 64)},
		&D2Next{Done: true, Owner: D2Ref{Node: sampleNode(r), Pos: id.Random(r, 64)}, Lo: id.Random(r, 64), Succs: []D2Ref{{Node: sampleNode(r), Pos: id.Random(r, 64)}}},
		&D2Leave{Succs: []D2Ref{{Node: sampleNode(r), Pos: id.Random(r, 64)}}},
		&D2Store{Key: id.Random(r, 64), Data: []byte("block"), Primary: true, Mode: D2PutIfHash, Prev: make([]byte, 32), Version: 1<<61 + 7}, &D2StoreDone{Copies: 3, NotMine: true},
		&D2Fetch{Key: id.Random(r, 64), Hash: make([]byte, 32), Local: true, NoData: true}, &D2Block{Key: id.Random(r, 64), Data: []byte("b"), Found: true, Version: 99},
		&D2Pointers{Pointers: []D2Pointer{{Key: id.Random(r, 64), Holder: sampleNode(r), Size: 8192}}},
		&D2Keys{Lo: id.Random(r, 64), Hi: id.Random(r, 64), Max: 100, Last: true, Pointers: true}, &D2KeyList{Keys: []id.ID{id.Random(r, 64)}, More: true}, &D2KeyList{Keys: []id.ID{id.Random(r, 64), id.Random(r, 64)}, Versions: []uint64{0, 1 << 62}},
		&D2Put{Key: id.Random(r, 64), Data: []byte("block"), Mode: D2PutReplace, Auth: D2Auth{Pub: make([]byte, 32), Expires: 1 << 62, Sig: make([]byte, 64)}},
		&D2Get{Key: id.Random(r, 64), Hash: make([]byte, 32)},
		&D2Delete{Key: id.Random(r, 64), Auth: D2Auth{Pub: []byte{1}, Expires: 7, Sig: []byte{2}, Signed: make([]byte, 64)}}, &D2Latest{Prefix: []byte{1, 2, 3}}, &D2List{Prefix: []byte{4, 5}, After: id.Random(r, 64), Max: 9}, &D2Listing{Keys: []id.ID{id.Random(r, 64), id.Random(r, 64)}, Next: id.Random(r, 64)}, &D2Drop{Key: id.Random(r, 64)}, &D2Invite{},
		&D2Stat{Key: id.Random(r, 64), Hash: make([]byte, 32)},
		&D2Holders{Key: id.Random(r, 64), Holders: []D2Holder{{Node: D2Ref{Node: sampleNode(r), Pos: id.Random(r, 64)}, State: D2HolderOK},
			{Node: D2Ref{Node: sampleNode(r), Pos: id.Random(r, 64)}, State: D2HolderMissing}, {Node: D2Ref{Node: sampleNode(r), Pos: id.Random(r, 64)}}}},
		&D2GetSpace{}, &D2Space{Joined: true, Capacity: 1 << 40, Usage: 3 << 30, Replicas: 3}, &D2Space{Usage: 9},
	}
	for _, ti := range types {
		m := ti.new()
		fill(tb, r, reflect.ValueOf(m).Elem())
		out = append(out, m)
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for _, m := range samples(t) {
		e := Envelope{Kind: Request, ReqID: 77, From: sampleNode(r), To: id.Random(r, id.Bytes), Msg: m}
		got, err := Decode(Encode(nil, e))
		if err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		if !reflect.DeepEqual(got, e) {
			t.Fatalf("%T: got %+v want %+v", m, got, e)
		}
	}
}

func TestSize(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, m := range samples(t) {
		for _, e := range []Envelope{
			{Msg: m},
			{Kind: Reply, ReqID: 1 << 50, From: sampleNode(r), To: id.Random(r, id.Bytes), Msg: m, Coord: Coord{X: 1, Height: 2}},
		} {
			if got, want := Size(e), len(Encode(nil, e)); got != want {
				t.Errorf("%T: Size %d, encoded %d bytes", m, got, want)
			}
		}
	}
	big := &Block{Key: id.Random(r, id.Bytes), Data: make([]byte, 300000)}
	if got, want := Size(Envelope{Msg: big}), len(Encode(nil, Envelope{Msg: big})); got != want {
		t.Errorf("large block: Size %d, encoded %d bytes", got, want)
	}
	batch := &ClientPutBatch{Items: []PutItem{{Data: make([]byte, 240000), Expiry: -1}, {Data: make([]byte, 200)}}}
	if got, want := Size(Envelope{Msg: batch}), len(Encode(nil, Envelope{Msg: batch})); got != want {
		t.Errorf("batch of a large block: Size %d, encoded %d bytes", got, want)
	}
	// Every registered message with every field filled, so that a field
	// added to a message Size measures without encoding is measured too.
	for _, ti := range types {
		for range 5 {
			m := newMsg(ti.typ)
			fill(t, r, reflect.ValueOf(m).Elem())
			if got, want := Size(Envelope{Msg: m}), len(Encode(nil, Envelope{Msg: m})); got != want {
				t.Fatalf("%s with every field filled: Size %d, encoded %d bytes", ti.typ, got, want)
			}
		}
	}
}

func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	e := Envelope{Kind: OneWay, Msg: &Ping{}}
	if err := WriteFrame(&buf, e); err != nil {
		t.Fatal(err)
	}
	p, err := ReadFrame(&buf, nil, MaxFrameBytes)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := Decode(p); err != nil || got.Msg.Type() != TypePing {
		t.Fatalf("got %+v, %v", got, err)
	}

	// A header claiming 4 GiB is refused before allocating.
	var hdr [4]byte
	binary.BigEndian.PutUint32(hdr[:], 0xffffffff)
	if _, err := ReadFrame(bytes.NewReader(hdr[:]), nil, MaxFrameBytes); !errors.Is(err, fault.ErrTooLarge) {
		t.Fatalf("huge frame: %v", err)
	}
	// Truncation is an error, not a short message.
	binary.BigEndian.PutUint32(hdr[:], 10)
	if _, err := ReadFrame(bytes.NewReader(append(hdr[:], 1, 2)), nil, MaxFrameBytes); err == nil {
		t.Fatal("truncated frame accepted")
	}
}

func TestDecodeRejects(t *testing.T) {
	good := Encode(nil, Envelope{Kind: Request, Msg: &Lookup{Key: id.Key([]byte("k"))}})
	cases := map[string][]byte{
		"empty":       nil,
		"garbage":     {0xff, 0xff, 0xff},
		"truncated":   good[:len(good)-3],
		"bad version": append(putUint(nil, envVersion, 9), good[2:]...),
		"bad type":    append(good, putUint(nil, envType, 999)...),
		"bad kind":    append(good, putUint(nil, envKind, 7)...),
	}
	// Too many successors.
	many := &Neighbors{Succs: sampleNodes(rand.New(rand.NewPCG(1, 1)), MaxListLen+1)}
	cases["long list"] = Encode(nil, Envelope{Msg: many})
	for name, b := range cases {
		if _, err := Decode(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// FuzzDecode: the decoder never panics, and whatever it accepts re-encodes to
// something that decodes to the same value (the encoding is canonical:
// fixed field order, zero values omitted, so equal values encode equally).
func FuzzDecode(f *testing.F) {
	for _, m := range samples(f) {
		f.Add(Encode(nil, Envelope{Kind: Reply, ReqID: 3, Msg: m}))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Decode(b)
		if err != nil {
			return
		}
		if Size(e) != len(Encode(nil, e)) {
			t.Fatalf("Size %d, encoded %d bytes", Size(e), len(Encode(nil, e)))
		}
		again, err := Decode(Encode(nil, e))
		if err != nil {
			t.Fatalf("re-encoding failed to decode: %v", err)
		}
		owned, err := DecodeOwned(bytes.Clone(b))
		if err != nil || !bytes.Equal(Encode(nil, owned), Encode(nil, e)) {
			t.Fatalf("DecodeOwned disagrees with Decode: %v\n%+v\n%+v", err, owned, e)
		}
		bulk, err := DecodeBulk(bytes.Clone(b))
		if err != nil || !bytes.Equal(Encode(nil, bulk), Encode(nil, e)) {
			t.Fatalf("DecodeBulk disagrees with Decode: %v\n%+v\n%+v", err, bulk, e)
		}
		if !bytes.Equal(Encode(nil, again), Encode(nil, e)) {
			t.Fatalf("round trip changed the value:\n%+v\n%+v", e, again)
		}
	})
}

func BenchmarkEncodeDecode(b *testing.B) {
	m := samples(b)[6]
	buf := make([]byte, 0, 4096)
	for i := 0; i < b.N; i++ {
		buf = Encode(buf[:0], Envelope{Kind: Reply, ReqID: uint64(i), Msg: m})
		if _, err := Decode(buf); err != nil {
			b.Fatal(err)
		}
	}
}

func TestCoordRoundTripAndBadValues(t *testing.T) {
	e := Envelope{Kind: Reply, ReqID: 3, Msg: &Ack{}, Coord: Coord{X: 12.5, Y: -3, Height: 4, Error: 0.25}}
	got, err := Decode(Encode(nil, e))
	if err != nil || got.Coord != e.Coord {
		t.Fatalf("got %+v, %v; want %+v", got.Coord, err, e.Coord)
	}
	for _, bad := range []float64{math.NaN(), math.Inf(1), 1e9} {
		e.Coord.Y = bad
		if _, err := Decode(Encode(nil, e)); !errors.Is(err, ErrMalformed) {
			t.Errorf("coordinate %v: err %v, want ErrMalformed", bad, err)
		}
	}
}

func TestBlockDataIsCopiedOutOfTheFrame(t *testing.T) {
	frame := Encode(nil, Envelope{Kind: Request, Msg: &StoreBlock{Key: id.Random(rand.New(rand.NewPCG(1, 1)), id.Bytes), Data: []byte("payload")}})
	e, err := Decode(frame)
	if err != nil {
		t.Fatal(err)
	}
	clear(frame) // the driver reuses its read buffer
	if got := string(e.Msg.(*StoreBlock).Data); got != "payload" {
		t.Fatalf("data %q changed with the frame", got)
	}
}

func TestDecodeOwnedKeepsTheFrame(t *testing.T) {
	frame := Encode(nil, Envelope{Kind: Reply, Msg: &Block{Key: id.Random(rand.New(rand.NewPCG(1, 2)), id.Bytes), Data: []byte("payload")}})
	e, err := DecodeOwned(frame)
	if err != nil {
		t.Fatal(err)
	}
	data := e.Msg.(*Block).Data
	if string(data) != "payload" {
		t.Fatalf("data %q", data)
	}
	if cap(data) != len(data) {
		t.Fatalf("data has capacity %d past its length %d: an append would write into the frame", cap(data), len(data))
	}
	clear(frame)
	if string(data) == "payload" {
		t.Fatal("DecodeOwned copied the data; it should point into the frame")
	}
}

// TestDecodeBulkKeepsOnlyTheBulk: the large blocks of a frame point into
// it; its small ones are copied, so that keeping one of them does not keep
// the whole frame alive.
func TestDecodeBulkKeepsOnlyTheBulk(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 3))
	big, small := bytes.Repeat([]byte("a"), BulkMin), bytes.Repeat([]byte("b"), BulkMin-1)
	blocks := []StoreBlock{{Key: id.Random(r, id.Bytes), Data: big}, {Key: id.Random(r, id.Bytes), Data: small}, {Key: id.Random(r, id.Bytes), Data: big}}
	frame := Encode(nil, Envelope{Kind: Request, Msg: &StoreBlocks{Blocks: blocks}})
	e, err := DecodeBulk(frame)
	if err != nil {
		t.Fatal(err)
	}
	got := e.Msg.(*StoreBlocks).Blocks
	for _, i := range []int{0, 2} {
		if b := got[i]; cap(b.Data) != len(b.Data) {
			t.Fatalf("block %d has capacity %d past its length %d: an append would write into the frame", i, cap(b.Data), len(b.Data))
		}
	}
	clear(frame)
	if bytes.Equal(got[0].Data, big) || bytes.Equal(got[2].Data, big) {
		t.Error("DecodeBulk copied a large block; it should point into the frame")
	}
	if !bytes.Equal(got[1].Data, small) {
		t.Error("a small block changed with the frame: DecodeBulk must copy it")
	}

	// Copied whole: a message whose blocks may outlive each other (a
	// client's batch of puts), and a large block padded with a field
	// nobody reads, so that keeping it would keep a frame four times its
	// size alive.
	for name, frame := range map[string][]byte{
		"ClientPutBatch": Encode(nil, Envelope{Kind: Request, Msg: &ClientPutBatch{Items: []PutItem{{Data: big}, {Data: big}}}}),
		"padded StoreBlock": putBytes(Encode(nil, Envelope{Kind: Request, Msg: &StoreBlock{Key: id.Random(r, id.Bytes), Data: big}}),
			99, make([]byte, 3*BulkMin)),
	} {
		e, err := DecodeBulk(frame)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want := Encode(nil, e)
		clear(frame)
		if !bytes.Equal(Encode(nil, e), want) {
			t.Errorf("%s: a block changed with the frame: DecodeBulk must copy it", name)
		}
	}
}

// TestHostSenderSurvivesTheCodec: the host runtime's own replies name the
// host by address only (no vnode). The TCP driver routes a message by its
// sender's address, so the codec must keep it; a list entry still needs
// an ID.
func TestHostSenderSurvivesTheCodec(t *testing.T) {
	e := Envelope{Kind: Reply, ReqID: 9, From: NodeRef{Addr: "127.0.0.1:4001"}, Msg: &Ack{}}
	b := Encode(nil, e)
	if len(b) != Size(e) {
		t.Fatalf("Size %d, encoded %d", Size(e), len(b))
	}
	got, err := Decode(b)
	if err != nil || got.From.Addr != "127.0.0.1:4001" || !got.From.IsZero() {
		t.Fatalf("decoded sender %+v, %v: want the address and no ID", got.From, err)
	}
	bad := Encode(nil, Envelope{Kind: Reply, From: NodeRef{Addr: "x"}, Msg: &Neighbors{Succs: []NodeRef{{Addr: "y"}}}})
	if _, err := Decode(bad); err == nil {
		t.Fatal("a list entry without an ID was accepted")
	}
}

// TestFullKeyListRoundTrips: a D2KeyList of MaxD2Keys keys, each with its
// version, survives the codec (its versions were bounded by the default
// list bound once the codec was generated, and d2's sync broke).
func TestFullKeyListRoundTrips(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	m := &D2KeyList{More: true}
	for i := range MaxD2Keys {
		m.Keys = append(m.Keys, id.Random(r, 64))
		m.Versions = append(m.Versions, uint64(i)<<40+1)
	}
	e, err := Decode(Encode(nil, Envelope{Kind: Reply, Msg: m}))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(e.Msg, m) {
		t.Fatal("a full D2KeyList changed in the codec")
	}
}

// TestDistrustedListIsBounded: a D2Space names at most MaxD2Distrusted
// partners, each an address of at most MaxAddrBytes. The first generated
// decoder bounded the list by MaxAddrBytes and each address by
// MaxTextBytes, both looser than the hand-written one's (issue 45).
func TestDistrustedListIsBounded(t *testing.T) {
	for name, m := range map[string]*D2Space{
		"one partner too many": {Distrusted: make([]string, MaxD2Distrusted+1)},
		"an address too long":  {Distrusted: []string{strings.Repeat("a", MaxAddrBytes+1)}},
	} {
		for i := range m.Distrusted {
			if m.Distrusted[i] == "" {
				m.Distrusted[i] = "127.0.0.1:1"
			}
		}
		if _, err := Decode(Encode(nil, Envelope{Kind: Reply, Msg: m})); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	ok := &D2Space{Distrusted: make([]string, MaxD2Distrusted)}
	for i := range ok.Distrusted {
		ok.Distrusted[i] = strings.Repeat("b", MaxAddrBytes)
	}
	if _, err := Decode(Encode(nil, Envelope{Kind: Reply, Msg: ok})); err != nil {
		t.Errorf("a full list of the longest addresses: %v", err)
	}
}
