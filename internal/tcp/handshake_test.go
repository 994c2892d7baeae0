package tcp

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"triad/internal/pki"
	"triad/internal/ring"
	"triad/internal/wire"
)

// handshakeSelf is the address of the node that accepts the connections
// in testdata/handshake.
const handshakeSelf = "10.0.0.1:4000"

// TestHandshake replays the scripts in testdata/handshake against the
// handshake of one accepted connection: each event prints the actions
// Driver.read carries out for it, in order, then the state the handshake
// is in. Regenerate the expectations with
//
//	go test ./internal/tcp -run TestHandshake -rewrite
//
// and read the diff: a changed action is a changed protocol.
//
// Directives (times are since the connection was accepted):
//
//	open [cert=ROLE addr=ADDR vnodes=N] [loopback] [check-vnodes] [max-held=N] [nonce=N]
//	     a connection accepted by the node at 10.0.0.1:4000, with
//	     HandshakeTimeout 5s; cert: the TLS certificate's role (node, site,
//	     operator, client) and address; loopback: from a loopback address;
//	     max-held: MaxUnproven (default 256); nonce: of its Challenge (7)
//	frame type=NAME [from=ADDR] [kind=request|oneway|reply] [nonce=N] [vnode=I] [machine=N] [at=DUR]
//	     a frame read at DUR (default: the last event's time) from the
//	     sender ADDR ("" a client); vnode: the sender is ADDR's vnode I,
//	     with the certificate's machine identity unless machine is given
//	expire at=DUR
//	     the read deadline passed at DUR
func TestHandshake(t *testing.T) {
	datadriven.Walk(t, "testdata/handshake", func(t *testing.T, path string) {
		var h *handshake
		var at time.Duration
		start := time.Unix(1_700_000_000, 0)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			if h == nil && d.Cmd != "open" {
				d.Fatalf(t, "%s before open", d.Cmd)
			}
			d.MaybeScanArgs(t, "at", &at)
			var acts []action
			switch d.Cmd {
			case "open":
				h, at = openHandshake(t, d), 0
				return describe(h, start)
			case "frame":
				acts = h.frame(nil, scriptFrame(t, d, h), start.Add(at))
			case "expire":
				if acts = h.expired(nil, start.Add(at)); len(acts) == 0 {
					return "nothing: not the handshake's deadline (the reader closes as idle or stalled)\n" + describe(h, start)
				}
			default:
				d.Fatalf(t, "unknown directive %q", d.Cmd)
			}
			var out strings.Builder
			for _, a := range acts {
				out.WriteString(a.String() + "\n")
			}
			return out.String() + describe(h, start)
		})
	})
}

// openHandshake makes the handshake an open directive describes.
func openHandshake(t *testing.T, d *datadriven.TestData) *handshake {
	h := &handshake{self: handshakeSelf, timeout: 5 * time.Second, maxHeld: 256, nonce: 7,
		loopback: d.HasArg("loopback"), checkVnodes: d.HasArg("check-vnodes")}
	d.MaybeScanArgs(t, "max-held", &h.maxHeld)
	d.MaybeScanArgs(t, "nonce", &h.nonce)
	var role string
	if d.MaybeScanArgs(t, "cert", &role) {
		r, err := pki.ParseRole(role)
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		id := pki.Identity{Name: "x", Site: "s", Role: r, Vnodes: 1}
		d.MaybeScanArgs(t, "addr", &id.Addr)
		d.MaybeScanArgs(t, "vnodes", &id.Vnodes)
		h.cert = &id
	}
	return h
}

// scriptFrame makes the envelope a frame directive describes.
func scriptFrame(t *testing.T, d *datadriven.TestData, h *handshake) wire.Envelope {
	var typ, kind string
	var nonce uint64
	d.ScanArgs(t, "type", &typ)
	d.MaybeScanArgs(t, "kind", &kind)
	d.MaybeScanArgs(t, "nonce", &nonce)
	msgs := map[string]wire.Msg{
		"Ping": &wire.Ping{}, "Ack": &wire.Ack{}, "Challenge": &wire.Challenge{Nonce: nonce},
		"Proof": &wire.Proof{Nonce: nonce}, "Stabilize": &wire.Stabilize{}, "StoreBlock": &wire.StoreBlock{},
		"ClientGet": &wire.ClientGet{}, "GetMaintStatus": &wire.GetMaintStatus{},
		"MaintControl": &wire.MaintControl{}, "CCFlood": &wire.CCFlood{},
	}
	e := wire.Envelope{Kind: wire.OneWay, Msg: msgs[typ]}
	if e.Msg == nil {
		d.Fatalf(t, "unknown message type %q", typ)
	}
	switch kind {
	case "request":
		e.Kind = wire.Request
	case "reply":
		e.Kind = wire.Reply
	case "", "oneway":
	default:
		d.Fatalf(t, "unknown kind %q", kind)
	}
	d.MaybeScanArgs(t, "from", &e.From.Addr)
	var vnode int
	if d.MaybeScanArgs(t, "vnode", &vnode) {
		e.From.ID = ring.VnodeID(e.From.Addr, vnode)
		if h.cert != nil {
			e.From.Machine = h.cert.MachineID()
		}
		d.MaybeScanArgs(t, "machine", &e.From.Machine)
	}
	return e
}

// describe prints the state of h: where its handshake is and whether its
// frames count as a stranger's.
func describe(h *handshake, start time.Time) string {
	var s string
	switch h.state {
	case awaitingClaim, isClient:
		s = h.state.String()
	case unproven:
		s = fmt.Sprintf("unproven %s, %d held, prove by %v", h.claimed, h.held, h.proveBy.Sub(start))
	case proven:
		s = "proven " + h.claimed
	}
	known := "a stranger"
	if h.known(false) {
		known = "known"
	} else if h.state == isClient {
		known = "a stranger until answered"
	}
	return fmt.Sprintf("state: %s (%s)\n", s, known)
}
