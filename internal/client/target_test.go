package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http/httptest"
	"strings"
	"testing"

	"triad/internal/id"
	"triad/internal/wire"
)

// TestParseKeyWantsEveryDigit: a key is read only whole; a short one is
// refused, not padded into another key.
func TestParseKeyWantsEveryDigit(t *testing.T) {
	whole := strings.Repeat("ab", id.Bytes)
	for _, tc := range []struct{ in, want string }{
		{whole, ""},
		{"0x" + strings.ToUpper(whole), ""},
		{"abcd1234", "want all 40 hex digits of the key (triad put prints it; a short form such as stat's 8-digit one names no block)"},
		{strings.Repeat("zz", id.Bytes), `bad key "` + strings.Repeat("zz", id.Bytes) + `": want 40 hex digits`},
	} {
		key, err := ParseKey(tc.in)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("ParseKey(%q): %v", tc.in, err)
		case tc.want == "" && key.String() != whole:
			t.Errorf("ParseKey(%q) = %s", tc.in, key)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("ParseKey(%q): %v, want %q", tc.in, err, tc.want)
		}
	}
}

// TestAskTypesTheReply: Ask returns the reply it expects and says what
// the node answered instead; Lookup makes a lookup the node gave up on an
// error.
func TestAskTypesTheReply(t *testing.T) {
	s := startStub(t, "10", func(req wire.Envelope, reply func(wire.Msg)) {
		switch m := req.Msg.(type) {
		case *wire.GetRingInfo:
			reply(&wire.RingInfo{})
		case *wire.ClientLookup:
			done := &wire.LookupDone{Hops: 2}
			if m.Key == id.Max(id.Bytes) {
				done.Failed = "no route"
			}
			reply(done)
		}
	})
	target := Target{Addr: s.ref.Addr}
	ctx := context.Background()
	if _, err := Ring(ctx, target); err != nil {
		t.Fatal(err)
	}
	if _, err := Ask[*wire.LookupDone](ctx, target, &wire.GetRingInfo{}); err == nil || err.Error() != s.ref.Addr+" answered *wire.RingInfo" {
		t.Errorf("wrong reply: %v", err)
	}
	if done, err := Lookup(ctx, target, id.ID{}); err != nil || done.Hops != 2 {
		t.Errorf("lookup: %+v, %v", done, err)
	}
	failing := id.Max(id.Bytes)
	if _, err := Lookup(ctx, target, failing); err == nil || err.Error() != "lookup of "+failing.String()+" failed: no route" {
		t.Errorf("failed lookup: %v", err)
	}
}

// TestTLSHint: a failure to reach a TLS listener without a bundle says
// what to set; other failures, and those with a bundle, are left as they
// are.
func TestTLSHint(t *testing.T) {
	srv := httptest.NewTLSServer(nil)
	defer srv.Close()
	tlsAddr := srv.Listener.Addr().String()
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	go func() { // a plain listener that closes what it is sent
		for {
			c, err := plain.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	eof := errors.New("EOF")
	if err := TLSHint(tlsAddr, "", eof); !errors.Is(err, eof) || !strings.Contains(err.Error(), "the node at "+tlsAddr+" speaks TLS: set TRIAD_TLS or --tls") {
		t.Errorf("TLS listener: %v", err)
	}
	if err := TLSHint(tlsAddr, "some/bundle", eof); err != eof {
		t.Errorf("with a bundle: %v", err)
	}
	if err := TLSHint(plain.Addr().String(), "", eof); err != eof {
		t.Errorf("plain listener: %v", err)
	}
	if err := TLSHint(tlsAddr, "", nil); err != nil {
		t.Errorf("no error: %v", err)
	}
}

// TestRingForms prints a vnode's ring info as text and as JSON.
func TestRingForms(t *testing.T) {
	ref := func(digit, addr string) wire.NodeRef {
		x, err := id.Parse(digit, id.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return wire.NodeRef{ID: x, Addr: addr}
	}
	a, b := ref("a", "127.0.0.1:1"), ref("b", "127.0.0.1:2")
	info := &wire.RingInfo{Vnodes: []wire.VnodeInfo{{Self: a, Preds: []wire.NodeRef{b}, Succs: nil, Fingers: []wire.Finger{{Bit: 159, Node: b}}}}}
	var text bytes.Buffer
	if err := WriteRing(&text, info); err != nil {
		t.Fatal(err)
	}
	want := "vnode " + a.ID.String() + " at 127.0.0.1:1\n" +
		"  predecessors (1):\n    0   " + b.ID.String() + "  127.0.0.1:2\n" +
		"  successors (0):\n" +
		"  fingers (1):\n    2^159 " + b.ID.String() + "  127.0.0.1:2\n"
	if text.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", text.String(), want)
	}
	js, err := json.Marshal(RingJSON(info))
	if err != nil {
		t.Fatal(err)
	}
	wantJSON := `{"vnodes":[{"self":{"id":"` + a.ID.String() + `","addr":"127.0.0.1:1"},"predecessors":[{"id":"` + b.ID.String() + `","addr":"127.0.0.1:2"}],"successors":[],"fingers":[{"bit":159,"node":{"id":"` + b.ID.String() + `","addr":"127.0.0.1:2"}}]}]}`
	if string(js) != wantJSON {
		t.Errorf("JSON:\n%s\nwant:\n%s", js, wantJSON)
	}
	if js, _ := json.Marshal(RingJSON(&wire.RingInfo{})); string(js) != `{"vnodes":null}` {
		t.Errorf("no vnodes: %s", js)
	}
}
