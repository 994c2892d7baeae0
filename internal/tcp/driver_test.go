package tcp

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"triad/internal/client"
	"triad/internal/node"
	"triad/internal/testutil"
	"triad/internal/wire"
)

// pingHandler answers Ping requests with Ack and ignores everything else.
type pingHandler struct{}

func (pingHandler) Handle(env node.Env, ev node.Event) {
	in, ok := ev.(node.MsgIn)
	if !ok || in.Env.Kind != wire.Request {
		return
	}
	if _, ok := in.Env.Msg.(*wire.Ping); ok {
		env.Send(in.From, wire.Envelope{Kind: wire.Reply, ReqID: in.Env.ReqID, Msg: &wire.Ack{}})
	}
}

// startDriver runs a driver with pingHandler on a free port until the test
// ends, then stops it and waits for Run to return.
func startDriver(t *testing.T) *Driver { return runDriver(t, Config{}, pingHandler{}) }

// runDriver runs a driver with cfg (on a free port, in a temporary data
// directory) and handler h until the test ends, then stops it and waits
// for Run to return.
func runDriver(t *testing.T, cfg Config, h node.Handler) *Driver {
	t.Helper()
	cfg.Listen, cfg.DataDir = "127.0.0.1:0", t.TempDir()
	d, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, h) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Run did not return within 10s of cancel")
		}
	})
	return d
}

// ping makes one Call and checks the reply is an Ack.
func ping(ctx context.Context, addr string) error {
	m, err := client.Call(ctx, addr, &wire.Ping{}, client.Options{})
	if err != nil {
		return err
	}
	if _, ok := m.(*wire.Ack); !ok {
		return fmt.Errorf("reply %T, want *wire.Ack", m)
	}
	return nil
}

func mustPing(t *testing.T, addr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ping(ctx, addr); err != nil {
		t.Fatalf("ping %s: %v", addr, err)
	}
}

func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// expectClosed reads from c until the server closes it, failing if it
// sends anything or is still open after 5s.
func expectClosed(t *testing.T, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	var buf [512]byte
	n, err := c.Read(buf[:])
	if n > 0 {
		t.Fatalf("server sent %d unexpected bytes: %q", n, buf[:n])
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("server did not close the connection within 5s")
	}
	if err == nil {
		t.Fatalf("read returned no data and no error")
	}
	// io.EOF, or a reset if the server closed with data unread: both are a
	// closed connection.
}

// rawPing sends a Ping over an open raw connection and reads the Ack.
func rawPing(c net.Conn, reqID uint64) error {
	c.SetDeadline(time.Now().Add(5 * time.Second))
	defer c.SetDeadline(time.Time{})
	if err := wire.WriteFrame(c, wire.Envelope{Kind: wire.Request, ReqID: reqID, Msg: &wire.Ping{}}); err != nil {
		return err
	}
	frame, err := wire.ReadFrame(c, nil, wire.MaxFrameBytes)
	if err != nil {
		return err
	}
	e, err := wire.Decode(frame)
	if err != nil {
		return err
	}
	if _, ok := e.Msg.(*wire.Ack); !ok || e.Kind != wire.Reply || e.ReqID != reqID {
		return fmt.Errorf("got %v %T req %d, want reply Ack req %d", e.Kind, e.Msg, e.ReqID, reqID)
	}
	return nil
}

func TestCallPing(t *testing.T) {
	d := startDriver(t)
	mustPing(t, d.Addr())
	if got := d.Stats.ConnsAccepted.Load(); got != 1 {
		t.Errorf("ConnsAccepted = %d, want 1", got)
	}
	if got := d.Stats.FramesIn.Load(); got != 1 {
		t.Errorf("FramesIn = %d, want 1", got)
	}
}

// sendBad sends raw bytes on a fresh connection while another client holds
// a healthy one, and checks that only the bad connection is closed, that
// it is counted, and that the driver still serves.
func sendBad(t *testing.T, raw []byte) {
	d := startDriver(t)
	good := dial(t, d.Addr())
	if err := rawPing(good, 1); err != nil {
		t.Fatalf("ping on the healthy connection: %v", err)
	}

	before := d.Stats.BadFrames.Load()
	bad := dial(t, d.Addr())
	if _, err := bad.Write(raw); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, bad)
	testutil.WaitFor(t, 5*time.Second, "BadFrames to count the frame", func() bool { return d.Stats.BadFrames.Load() == before+1 })

	if err := rawPing(good, 2); err != nil {
		t.Errorf("ping on the healthy connection after the bad frame: %v", err)
	}
	mustPing(t, d.Addr())
	if got := d.Stats.BadFrames.Load(); got != before+1 {
		t.Errorf("BadFrames = %d, want %d", got, before+1)
	}
}

func TestOversizedFrameClosesConnection(t *testing.T) {
	for _, n := range []uint32{1<<32 - 1, wire.MaxFrameBytes + 1} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			// Only the header: the driver must refuse it before waiting
			// for (or allocating) the body.
			sendBad(t, binary.BigEndian.AppendUint32(nil, n))
		})
	}
}

func TestGarbageFrameClosesConnection(t *testing.T) {
	valid := wire.Encode(nil, wire.Envelope{Kind: wire.Request, ReqID: 1, Msg: &wire.Ping{}})
	wrongVersion := bytes.Clone(valid)
	wrongVersion[1] = 99 // field 1 (version) is first: tag, then a one-byte varint
	cases := []struct {
		name    string
		payload []byte
	}{
		{"empty", nil},
		{"all 0xff", bytes.Repeat([]byte{0xff}, 64)},
		{"text", []byte("GET / HTTP/1.1\r\nHost: triad\r\n\r\n")},
		{"truncated envelope", valid[:len(valid)-1]},
		{"wrong version", wrongVersion},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := wire.Decode(tc.payload); err == nil {
				t.Fatalf("test premise: wire.Decode accepts %q", tc.payload)
			}
			frame := binary.BigEndian.AppendUint32(nil, uint32(len(tc.payload)))
			sendBad(t, append(frame, tc.payload...))
		})
	}
}

func TestConcurrentClients(t *testing.T) {
	const clients = 200
	d := startDriver(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errs := make(chan error, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			if err := ping(ctx, d.Addr()); err != nil {
				errs <- fmt.Errorf("client %d: %w", i, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := d.Stats.FramesIn.Load(); got != clients {
		t.Errorf("FramesIn = %d, want %d", got, clients)
	}
	if got := d.Stats.BadFrames.Load(); got != 0 {
		t.Errorf("BadFrames = %d, want 0", got)
	}
}

func TestFileDisk(t *testing.T) {
	dir := t.TempDir()
	disk := FileDisk{Dir: dir}
	for _, data := range [][]byte{[]byte("first"), []byte("second, longer than the first"), {}} {
		if err := disk.WriteFile("state.json", data); err != nil {
			t.Fatal(err)
		}
		got, err := disk.ReadFile("state.json")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Errorf("ReadFile = %q, want %q", got, data)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "state.json" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want just state.json (no temporary files left)", names)
	}

	if _, err := disk.ReadFile("missing"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a missing file: %v, want fs.ErrNotExist", err)
	}

	// Names are file names: a path cannot leave the directory.
	if err := disk.WriteFile("../escape", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "..", "escape")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("WriteFile(../escape) wrote outside the directory (stat: %v)", err)
	}
	if got, err := disk.ReadFile("escape"); err != nil || string(got) != "x" {
		t.Errorf("ReadFile(escape) = %q, %v; want \"x\"", got, err)
	}
}
