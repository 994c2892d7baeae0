package tcp

import (
	"fmt"
	"strings"
	"time"

	"triad/internal/node"
	"triad/internal/pki"
	"triad/internal/ring"
	"triad/internal/wire"
)

// handshake decides, for one accepted connection, whose it is and what
// may come on it (see Driver): its first frame claims an address, or none
// for a client; a peer's claim is proven by its certificate or by a
// Challenge answered with a Proof, and its frames wait until then. It is a
// state machine without I/O: the connection's reader (Driver.read) feeds
// it what happens (a frame read, the read deadline passed) with the time,
// and carries out the actions it returns, in order. testdata/handshake is
// its script.
type handshake struct {
	self        node.Addr     // this node's listen address
	timeout     time.Duration // how long a claim may take to prove (Config.HandshakeTimeout)
	maxHeld     int           // frames held before the proof; one more closes (Config.MaxUnproven)
	checkVnodes bool          // Config.CheckVnodes
	// cert is the identity in the peer's certificate, with TLS; nil
	// without. A certificate that names an address proves it.
	cert *pki.Identity
	// loopback says the connection comes from a loopback address: without
	// TLS, only such a client may send an operator's command.
	loopback bool
	// nonce is the Challenge sent if the connection claims an address
	// without a certificate; the driver draws it from crypto/rand.
	nonce uint64

	state   hsState
	claimed node.Addr // the address the first frame claimed; "" for a client
	proveBy time.Time // while unproven: when the connection is closed
	held    int       // while unproven: frames held
}

// hsState is where a connection's handshake is.
type hsState uint8

const (
	awaitingClaim hsState = iota // no frame yet
	isClient                     // the first frame claimed no address
	unproven                     // a peer's address claimed, the Proof not yet come
	proven                       // a peer's address proven, by certificate or Proof
)

func (s hsState) String() string {
	return [...]string{"awaiting claim", "client", "unproven", "proven"}[s]
}

// verb is what an action asks the reader to do.
type verb uint8

const (
	// makeRoute makes the route back on this connection, for the address
	// claimed ("": a client's route).
	makeRoute verb = iota
	// sendChallenge sends a Challenge with nonce to addr, over a
	// connection this node dials.
	sendChallenge
	// sendProof sends a Proof of nonce to addr, over a connection this
	// node dials: the answer to addr's Challenge.
	sendProof
	// acceptPeer records the connection as addr's proven one (addr's
	// requests are answered on it) and delivers the frames held, in order.
	acceptPeer
	// deliver hands the frame to the node as addr's ("": as the client's
	// route's).
	deliver
	// hold keeps the frame, as addr's, until the claim is proven.
	hold
	// consume releases the frame: it was the handshake's own.
	consume
	// drop releases the frame and counts it as forged (why).
	drop
	// refuse is drop of a client's request it may not send, answered
	// with an error that says why, so the client need not wait out its
	// timeout to learn it (a writer's certificate sending an operator's
	// command).
	refuse
	// closeForged drops the frame as forged (why) and closes the connection.
	closeForged
	// closeUnproven releases the frame, if any, counts the connection as
	// unproven (why) and closes it.
	closeUnproven
)

// action is one thing the reader must do, as data.
type action struct {
	verb  verb
	addr  node.Addr // makeRoute, sendChallenge, sendProof, acceptPeer, deliver, hold
	nonce uint64    // sendChallenge, sendProof
	why   string    // drop, refuse, closeForged, closeUnproven
	held  int       // acceptPeer: how many frames were held, to deliver
}

func (a action) String() string {
	switch a.verb {
	case makeRoute:
		if a.addr == "" {
			return "route to a client"
		}
		return "route to " + a.addr
	case sendChallenge:
		return fmt.Sprintf("send Challenge nonce=%d to %s", a.nonce, a.addr)
	case sendProof:
		return fmt.Sprintf("send Proof nonce=%d to %s", a.nonce, a.addr)
	case acceptPeer:
		if a.held > 0 {
			return fmt.Sprintf("accept as %s, deliver the %d held", a.addr, a.held)
		}
		return "accept as " + a.addr
	case deliver:
		if a.addr == "" {
			return "deliver from the client"
		}
		return "deliver from " + a.addr
	case hold:
		return "hold from " + a.addr
	case consume:
		return "consume"
	case drop:
		return "drop as forged: " + a.why
	case refuse:
		return "refuse: " + a.why
	case closeForged:
		return "close as forged: " + a.why
	case closeUnproven:
		return "close as unproven: " + a.why
	}
	return fmt.Sprintf("verb(%d)", a.verb)
}

// closes reports whether the action ends the connection.
func (a action) closes() bool { return a.verb == closeForged || a.verb == closeUnproven }

// known says whether the connection's frames are out of the strangers'
// budget (see Driver), as far as the handshake knows: a certificate
// verified, or a peer proved its address, or a client has been answered
// (answered, which the route knows).
func (h *handshake) known(answered bool) bool {
	return h.cert != nil || h.state == proven || h.state == isClient && answered
}

// readBy is when the next read must end: idleBy, or sooner if a claim
// must be proven sooner.
func (h *handshake) readBy(idleBy time.Time) time.Time {
	if h.state == unproven && h.proveBy.Before(idleBy) {
		return h.proveBy
	}
	return idleBy
}

// expired is the event "the read deadline passed at now". It closes an
// unproven connection whose time to prove has run out; otherwise it
// returns nothing, and the deadline was the idle one.
func (h *handshake) expired(out []action, now time.Time) []action {
	if h.state == unproven && !now.Before(h.proveBy) {
		out = append(out, action{verb: closeUnproven, why: "connection never proved the address it claimed"})
	}
	return out
}

// frame is the event "frame e was read at now". It appends the actions to
// out and returns it; exactly one of them is for the frame itself
// (deliver, hold, consume, drop or a close).
func (h *handshake) frame(out []action, e wire.Envelope, now time.Time) []action {
	if h.state == awaitingClaim {
		if out = h.claim(out, e.From.Addr, now); out[len(out)-1].closes() {
			return out
		}
	}
	return h.check(out, e)
}

// claim takes the first frame's sender address as the connection's.
func (h *handshake) claim(out []action, addr node.Addr, now time.Time) []action {
	switch {
	case addr == h.self:
		return append(out, action{verb: closeForged, why: "claims to be this node"})
	case strings.HasPrefix(addr, "@"):
		return append(out, action{verb: closeForged, why: "claims a route of this node's, not an address"})
	case h.cert != nil && addr != "" && addr != h.cert.Addr:
		// A certificate that names an address may also act as a client
		// (empty claim): it may then send what any client may, and no
		// more (check's role tests): a daemon's deployment page surveys
		// the ring with its own node's certificate.
		return append(out, action{verb: closeForged,
			why: fmt.Sprintf("claims an address its certificate (%s of %s) does not name", h.cert.Name, h.cert.Site)})
	}
	h.claimed = addr
	out = append(out, action{verb: makeRoute, addr: addr})
	switch {
	case addr == "":
		h.state = isClient
	case h.cert != nil:
		h.state = proven // the certificate proved the address
		out = append(out, action{verb: acceptPeer, addr: addr})
	default:
		h.state = unproven
		h.proveBy = now.Add(h.timeout)
		out = append(out, action{verb: sendChallenge, addr: addr, nonce: h.nonce})
	}
	return out
}

// check decides what becomes of a frame once the connection's claim is
// made.
func (h *handshake) check(out []action, e wire.Envelope) []action {
	switch {
	case e.From.Addr != h.claimed:
		return append(out, action{verb: drop, why: "sender differs from the connection's"})
	case e.Kind == wire.Reply:
		// Replies come back on the connection the request went out on,
		// which we dialled; one here is an attempt to answer a call it
		// never saw.
		return append(out, action{verb: drop, why: "reply on an accepted connection"})
	case h.state == isClient:
		if why := h.refuseClient(e.Msg.Type()); why != "" {
			if e.Kind == wire.Request {
				return append(out, action{verb: refuse, why: why})
			}
			return append(out, action{verb: drop, why: why})
		}
		return append(out, action{verb: deliver})
	case h.cert != nil && !e.From.IsZero():
		if why := h.refuseVnode(e.From); why != "" {
			return append(out, action{verb: drop, why: why})
		}
	}
	switch m := e.Msg.(type) {
	case *wire.Challenge:
		// The proof goes out on our own connection to the claimed
		// address, the one the challenge is about: a forged challenge
		// only makes us send the real process a proof it ignores.
		return append(out, action{verb: consume}, action{verb: sendProof, addr: h.claimed, nonce: m.Nonce})
	case *wire.Proof:
		if h.state == proven || m.Nonce != h.nonce {
			return append(out, action{verb: drop, why: "proof nobody asked for"})
		}
		held := h.held
		h.state, h.held = proven, 0
		return append(out, action{verb: consume}, action{verb: acceptPeer, addr: h.claimed, held: held})
	}
	switch {
	case wire.RoleOf(e.Msg.Type()) == wire.RoleOperator:
		// Operators are clients; a node never sends this.
		return append(out, action{verb: drop, why: "an operator's command from a node"})
	case h.state == proven:
		return append(out, action{verb: deliver, addr: h.claimed})
	case h.held >= h.maxHeld:
		return append(out, action{verb: closeUnproven, why: "too many frames before the connection proved its address"})
	}
	h.held++
	return append(out, action{verb: hold, addr: h.claimed})
}

// refuseClient says why a client's message of type t is refused, or "":
// a node's message, or an operator's command from a certificate that is
// not an operator's (with TLS) or from another machine (without).
func (h *handshake) refuseClient(t wire.Type) string {
	switch role := wire.RoleOf(t); {
	case role == wire.RoleNode:
		return "a node's message from a client"
	case role != wire.RoleOperator:
		return ""
	case h.cert != nil && h.cert.Role != pki.RoleOperator:
		return fmt.Sprintf("an operator's command from a %s certificate (it needs the operator role)", h.cert.Role)
	case h.cert == nil && !h.loopback:
		return "an operator's command from another machine"
	}
	return ""
}

// refuseVnode says why a frame sent by the vnode from, on a connection
// with a node's certificate, is refused, or "": from carries a machine
// identity other than the certificate's, or (with checkVnodes) is not one
// of the vnodes the certificate allows.
func (h *handshake) refuseVnode(from wire.NodeRef) string {
	if from.Machine != h.cert.MachineID() {
		return fmt.Sprintf("a machine identity %016x its certificate does not name", from.Machine)
	}
	if !h.checkVnodes {
		return ""
	}
	if i, ok := ring.VnodeIndex(from); !ok || i >= h.cert.Vnodes {
		return fmt.Sprintf("a vnode its certificate does not allow (%d vnodes)", h.cert.Vnodes)
	}
	return ""
}
