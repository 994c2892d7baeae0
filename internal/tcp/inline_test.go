package tcp

import (
	"encoding/binary"
	"testing"
	"time"

	"triad/internal/node"
	"triad/internal/testutil"
	"triad/internal/wire"
)

// burstHandler answers a Ping with n replies at once, each a Block whose
// data carries its place in the burst: more than a socket buffer holds.
type burstHandler struct{ n, size int }

func (h burstHandler) Handle(env node.Env, ev node.Event) {
	in, ok := ev.(node.MsgIn)
	if !ok || in.Env.Kind != wire.Request {
		return
	}
	for i := range h.n {
		data := make([]byte, h.size)
		binary.BigEndian.PutUint32(data, uint32(i))
		env.Send(in.From, wire.Envelope{Kind: wire.Reply, ReqID: in.Env.ReqID, Msg: &wire.Block{Data: data}})
	}
}

// The loop writes a small frame to an idle plain TCP connection itself
// (writeInline); once the socket is full, what it could not write goes to
// the writer ahead of the frames queued after it. A burst of 4,000 frames
// of 8 KB to a client that reads nothing until the burst is sent (32 MB,
// more than the socket buffers) arrives whole and in order, some of it
// written inline.
func TestInlineWritesKeepOrderUnderBackpressure(t *testing.T) {
	const n, size = 4000, 8 << 10
	d := runDriver(t, Config{MaxQueuedBytes: 64 << 20, MaxQueuedBytesTotal: 64 << 20, SendQueue: 2 * n}, burstHandler{n, size})
	c := dial(t, d.Addr())
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if err := wire.WriteFrame(c, wire.Envelope{Kind: wire.Request, ReqID: 7, Msg: &wire.Ping{}}); err != nil {
		t.Fatal(err)
	}
	// Nothing is read until the socket is full and frames wait queued.
	if !testutil.Poll(20*time.Second, func() bool { return d.queued() > 0 }) {
		t.Fatalf("nothing queued after 20 s: %d frames written", d.Stats.FramesOut.Load())
	}
	if d.Stats.InlineFrames.Load() == 0 {
		t.Fatal("no frame of the burst was written inline")
	}
	for i := range n {
		frame, err := wire.ReadFrame(c, nil, wire.MaxFrameBytes)
		if err != nil {
			t.Fatalf("frame %d of %d: %v", i, n, err)
		}
		e, err := wire.Decode(frame)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		b, ok := e.Msg.(*wire.Block)
		if !ok || len(b.Data) != size || binary.BigEndian.Uint32(b.Data) != uint32(i) {
			t.Fatalf("frame %d: %T, want block %d of %d bytes", i, e.Msg, i, size)
		}
	}
	t.Logf("%d of %d frames written inline", d.Stats.InlineFrames.Load(), n)
}

// queued is the bytes queued across the driver's connections.
func (d *Driver) queued() uint64 { return uint64(d.queuedTotal.Load()) }
