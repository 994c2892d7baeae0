package rpc

import (
	"errors"
	"fmt"
	"time"

	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/wire"
)

// ErrTimeout is passed to a continuation whose call got no reply in time.
var ErrTimeout = errors.New("rpc: timeout")

// Config sets a Client's limits.
type Config struct {
	// Timeout is the time to wait for a reply from a peer whose round-trip
	// time is not known yet. Default 2s. Known peers get an adaptive
	// timeout (2·srtt + 4·rttvar, after TCP's RTO, RFC 6298) between MinTimeout
	// and 2·Timeout.
	Timeout time.Duration
	// MinTimeout is the floor of adaptive timeouts. Default 500ms.
	MinTimeout time.Duration
	// MaxPending bounds calls in flight; Call refuses more. Default 4096.
	MaxPending int
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{Timeout: 2 * time.Second, MinTimeout: 500 * time.Millisecond, MaxPending: 4096}
}

// Validate reports a config that cannot work.
func (c Config) Validate() error {
	if c.Timeout <= 0 {
		return fmt.Errorf("rpc: timeout %v must be positive", c.Timeout)
	}
	if c.MinTimeout <= 0 || c.MinTimeout > c.Timeout {
		return fmt.Errorf("rpc: min timeout %v must be in (0, %v]", c.MinTimeout, c.Timeout)
	}
	if c.MaxPending <= 0 {
		return fmt.Errorf("rpc: max pending %d must be positive", c.MaxPending)
	}
	return nil
}

// Reply is a call's continuation. err is ErrTimeout, or the *wire.Error the
// peer replied with, or nil with the peer's reply in m.
type Reply func(env node.Env, m wire.Msg, err error)

// call is one call in flight; a nil cont marks a free slot.
type call struct {
	wireID uint64 // the request ID on the wire
	typ    wire.Type
	to     node.Addr
	sent   time.Time
	cont   Reply
	cancel func()
	est    *rttEstimate // to's entry when the call was made, if any
}

// Client tracks the calls one process has in flight.
//
// Calls are numbered in sequence, but the request ID a call carries on the
// wire is its sequence number's low 32 bits under 32 fresh random bits, so
// that nobody who has not seen the request can answer it: a forged reply
// must guess the random half (one chance in 2^32), and is dropped as stray
// otherwise.
type Client struct {
	cfg  Config
	next uint64 // the sequence number of the last call
	// Request IDs are sequential and most calls end within a round trip,
	// so calls in flight sit in a ring indexed by ID rather than a map:
	// window holds IDs in (done, next] at index ID mod len(window). A call
	// still pending when the full window must slide on moves to old.
	window  []call
	done    uint64
	old     map[uint64]call
	pending int
	rtt     map[node.Addr]*rttEstimate

	// Predict, if set, predicts the round-trip time to a peer never measured
	// (from network coordinates) and the prediction's relative error.
	Predict func(peer node.Addr) (rtt time.Duration, relErr float64, ok bool)

	// Counters, exported by the driver.
	Calls, Replies, Timeouts, Stray uint64
	// Latency holds, by request type, the round-trip times of the calls
	// answered.
	Latency map[wire.Type]*Histogram
}

// LatencyBuckets are the upper bounds of a Histogram's buckets.
var LatencyBuckets = [...]time.Duration{
	250 * time.Microsecond, 500 * time.Microsecond, time.Millisecond, 2 * time.Millisecond,
	5 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 200 * time.Millisecond, 500 * time.Millisecond, time.Second,
	2 * time.Second, 5 * time.Second,
}

// A Histogram counts durations by LatencyBuckets: Counts[i] those at most
// LatencyBuckets[i] and above the bucket before, the last entry the rest.
type Histogram struct {
	Counts [len(LatencyBuckets) + 1]uint64
	Count  uint64
	Sum    time.Duration
}

// Observe counts one duration.
func (h *Histogram) Observe(d time.Duration) {
	i := 0
	for i < len(LatencyBuckets) && d > LatencyBuckets[i] {
		i++
	}
	h.Counts[i]++
	h.Count++
	h.Sum += d
}

// NewClient returns a client with cfg, which must be valid.
func NewClient(cfg Config) *Client {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	return &Client{cfg: cfg, old: make(map[uint64]call), rtt: make(map[node.Addr]*rttEstimate), Latency: make(map[wire.Type]*Histogram)}
}

// maxWindow bounds the ring of calls in flight (a power of two).
const maxWindow = 4096

// find returns the call in flight with sequence number reqID.
func (c *Client) find(reqID uint64) (call, bool) {
	if reqID > c.next {
		return call{}, false
	}
	if reqID <= c.done {
		if len(c.old) == 0 {
			return call{}, false
		}
		cl, ok := c.old[reqID]
		return cl, ok
	}
	cl := c.window[reqID&uint64(len(c.window)-1)]
	return cl, cl.cont != nil
}

// add records the call with ID c.next.
func (c *Client) add(cl call) {
	for c.next-c.done > uint64(len(c.window)) {
		if len(c.window) < maxWindow {
			c.grow()
			continue
		}
		// Slide: the oldest ID leaves the window.
		c.done++
		i := c.done & uint64(len(c.window)-1)
		if old := c.window[i]; old.cont != nil {
			c.old[c.done] = old
			c.window[i] = call{}
		}
	}
	c.window[c.next&uint64(len(c.window)-1)] = cl
	c.pending++
}

func (c *Client) grow() {
	w := make([]call, max(16, 2*len(c.window)))
	for id := c.done + 1; id < c.next; id++ {
		w[id&uint64(len(w)-1)] = c.window[id&uint64(len(c.window)-1)]
	}
	c.window = w
}

// remove ends the call with reqID, which is in flight.
func (c *Client) remove(reqID uint64) {
	c.pending--
	if reqID <= c.done {
		delete(c.old, reqID)
		return
	}
	mask := uint64(len(c.window) - 1)
	c.window[reqID&mask] = call{}
	for c.done < c.next && c.window[(c.done+1)&mask].cont == nil {
		c.done++
	}
}

// RTT is a smoothed round-trip time and its variation, kept as RFC 6298
// keeps them, and the least sample.
type RTT struct {
	SRTT, RTTVar time.Duration
	// Min is the least sample: the path's delay with the least queueing
	// seen, the measure of proximity (a smoothed time moves with load).
	Min time.Duration
}

// Observe adds a sample; the first one sets the estimate.
func (e *RTT) Observe(rtt time.Duration) {
	if e.Min == 0 || rtt < e.Min {
		e.Min = rtt
	}
	if e.SRTT == 0 && e.RTTVar == 0 {
		e.SRTT, e.RTTVar = rtt, rtt/2
		return
	}
	d := e.SRTT - rtt
	if d < 0 {
		d = -d
	}
	e.RTTVar = (3*e.RTTVar + d) / 4
	e.SRTT = (7*e.SRTT + rtt) / 8
}

// rttEstimate is a peer's RTT. Calls keep a pointer to their peer's entry
// so that a reply updates it without a second lookup; gone marks an entry
// dropped from the table.
type rttEstimate struct {
	RTT
	gone bool
}

// maxRTTPeers bounds the RTT table; when full it is cleared (not pruned
// piecemeal, so that map order never decides what a node remembers).
const maxRTTPeers = 4096

// observe applies a sample to peer's entry e (nil or gone: look it up).
func (c *Client) observe(peer node.Addr, e *rttEstimate, rtt time.Duration) {
	if e == nil || e.gone {
		e = c.rtt[peer]
	}
	if e == nil {
		if len(c.rtt) >= maxRTTPeers {
			for _, e := range c.rtt {
				e.gone = true
			}
			clear(c.rtt)
		}
		e = &rttEstimate{}
		c.rtt[peer] = e
	}
	e.Observe(rtt)
}

// Timeout is how long a call to peer waits: adaptive once the peer has
// answered; before that, as in STP, the predicted RTT plus six times its
// expected error; the configured default when nothing predicts it.
func (c *Client) Timeout(peer node.Addr) time.Duration {
	return c.timeout(peer, c.rtt[peer])
}

func (c *Client) timeout(peer node.Addr, e *rttEstimate) time.Duration {
	if e == nil {
		if c.Predict != nil {
			if rtt, relErr, ok := c.Predict(peer); ok {
				t := rtt + time.Duration(6*relErr*float64(rtt))
				return min(max(t, c.cfg.MinTimeout), 2*c.cfg.Timeout)
			}
		}
		return c.cfg.Timeout
	}
	// Twice the smoothed RTT, not TCP's one: a peer's answer may queue
	// behind others on a slow access link, and a false timeout costs a
	// peer its place in our tables.
	return min(max(2*e.SRTT+4*e.RTTVar, c.cfg.MinTimeout), 2*c.cfg.Timeout)
}

// SRTT is the smoothed round-trip time measured to peer, if any.
func (c *Client) SRTT(peer node.Addr) (time.Duration, bool) {
	if e := c.rtt[peer]; e != nil {
		return e.SRTT, true
	}
	return 0, false
}

// MinRTT is the least round-trip time measured to peer, if any.
func (c *Client) MinRTT(peer node.Addr) (time.Duration, bool) {
	if e := c.rtt[peer]; e != nil {
		return e.Min, true
	}
	return 0, false
}

// Forget drops what is known of peer's round-trip time (it restarted, or
// was declared dead).
func (c *Client) Forget(peer node.Addr) {
	if e := c.rtt[peer]; e != nil {
		e.gone = true
		delete(c.rtt, peer)
	}
}

// Timer is the timeout of one call, by its sequence number.
type Timer struct{ Seq uint64 }

func (t Timer) String() string { return fmt.Sprintf("rpc-timeout(%d)", t.Seq) }

// Call sends m to the virtual server dst (zero: any) of the process at to,
// from the local virtual server from, and arranges for cont to run once with
// the outcome. It waits timeout (zero: the peer's adaptive timeout). It returns
// false, and cont never runs, when MaxPending calls are already in flight.
func (c *Client) Call(env node.Env, to node.Addr, from wire.NodeRef, dst id.ID, m wire.Msg, timeout time.Duration, cont Reply) bool {
	if c.pending >= c.cfg.MaxPending {
		return false
	}
	if cont == nil {
		cont = func(node.Env, wire.Msg, error) {} // a nil cont would mark the slot free
	}
	est := c.rtt[to]
	if timeout <= 0 {
		timeout = c.timeout(to, est)
	}
	c.next++
	seq := c.next
	wireID := env.Rand().Uint64()&^(1<<32-1) | seq&(1<<32-1)
	c.Calls++
	env.Send(to, wire.Envelope{Kind: wire.Request, ReqID: wireID, From: from, To: dst, Msg: m})
	c.add(call{wireID: wireID, typ: m.Type(), to: to, sent: env.Now(), cont: cont, est: est, cancel: env.After(timeout, Timer{seq})})
	return true
}

// lookup returns the sequence number and the call in flight that the
// request ID wireID names, if any: the sequence number is the latest one
// whose low 32 bits are wireID's, and the call must carry wireID in full.
func (c *Client) lookup(wireID uint64) (uint64, call, bool) {
	seq := c.next - uint64(uint32(c.next)-uint32(wireID))
	cl, ok := c.find(seq)
	if !ok || cl.wireID != wireID {
		return 0, call{}, false
	}
	return seq, cl, true
}

// Pending is the number of calls in flight.
func (c *Client) Pending() int { return c.pending }

// Expects reports whether in answers a call in flight to its sender, so a
// caller can act on the answer (clear a dead mark) before HandleReply runs
// the call's continuation.
func (c *Client) Expects(in node.MsgIn) bool {
	_, cl, ok := c.lookup(in.Env.ReqID)
	return ok && cl.to == in.From
}

// HandleReply completes the call in reply to which in was sent and returns
// the peer and the round-trip time. ok is false for a reply to no pending
// call (late, duplicated or forged), which is counted and dropped.
func (c *Client) HandleReply(env node.Env, in node.MsgIn) (peer node.Addr, rtt time.Duration, ok bool) {
	seq, cl, ok := c.lookup(in.Env.ReqID)
	if !ok || cl.to != in.From {
		c.Stray++
		return "", 0, false
	}
	c.remove(seq)
	cl.cancel()
	c.Replies++
	rtt = env.Now().Sub(cl.sent)
	c.observe(cl.to, cl.est, rtt)
	lat := c.Latency[cl.typ]
	if lat == nil {
		lat = &Histogram{}
		c.Latency[cl.typ] = lat
	}
	lat.Observe(rtt)
	var err error
	if e, isErr := in.Env.Msg.(*wire.Error); isErr {
		err = e
	}
	cl.cont(env, in.Env.Msg, err)
	return cl.to, rtt, true
}

// HandleTimer fails the call whose timer t is; it reports whether t was one
// of this client's timers.
func (c *Client) HandleTimer(env node.Env, t node.Timer) bool {
	rt, isRPC := t.(Timer)
	if !isRPC {
		return false
	}
	cl, ok := c.find(rt.Seq)
	if !ok {
		return true // the reply won the race with a cancel that came too late
	}
	c.remove(rt.Seq)
	c.Timeouts++
	cl.cont(env, nil, fmt.Errorf("%w: %s after %v", ErrTimeout, cl.to, env.Now().Sub(cl.sent)))
	return true
}

// Respond sends m as the reply to the request in.
func Respond(env node.Env, in node.MsgIn, from wire.NodeRef, m wire.Msg) {
	env.Send(in.From, wire.Envelope{Kind: wire.Reply, ReqID: in.Env.ReqID, From: from, To: in.Env.From.ID, Msg: m})
}

// RespondError sends an error reply to the request in.
func RespondError(env node.Env, in node.MsgIn, from wire.NodeRef, code fault.Code, text string) {
	Respond(env, in, from, &wire.Error{Code: code, Text: text})
}
