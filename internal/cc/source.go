package cc

import (
	"time"

	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/rpc"
	"triad/internal/wire"
)

// source is a node's side as the sender of requests (§IV-2, §IV-3): its
// window, its backlog, what it has in flight and its round-trip estimate.
type source struct {
	n       *Node
	window  float64
	backlog fifo[request]
	out     map[uint64]*pending
	seq     uint64
	// One estimate for every destination (§IV-3).
	rtt          rpc.RTT
	lastDecrease time.Time
}

type request struct {
	key     id.ID
	payload []byte
}

type pending struct {
	request
	first   time.Time // first sent
	rto     time.Duration
	retries int
}

func (s *source) init(n *Node) {
	s.n, s.window, s.out = n, n.cfg.InitialWindow, map[uint64]*pending{}
}

func (s *source) send(env node.Env, key id.ID, payload []byte) error {
	if s.backlog.len() >= s.n.cfg.MaxBacklog {
		s.n.Stats.Refused++
		return ErrBusy
	}
	s.backlog.push(request{key, payload})
	s.inject(env)
	return nil
}

// mayInject reports whether the scheme lets one more request in now.
func (s *source) mayInject() bool {
	switch s.n.cfg.Scheme {
	case None:
		// No window, but no unbounded memory either: past this many in
		// flight the application waits.
		return len(s.out) < noneMaxOutstanding*s.n.cfg.MaxBacklog
	case BackPressure:
		// Fresh requests take at most a quarter of the queue, so that
		// what other sources sent through this node is not held for
		// room that its own requests took.
		return s.n.q.len() < s.n.cfg.QueueCap/4
	}
	return float64(len(s.out)) < max(1, s.window)
}

// noneMaxOutstanding bounds an uncontrolled source's requests in flight,
// in backlogs' worth.
const noneMaxOutstanding = 10

// inject sends from the backlog what the window allows.
func (s *source) inject(env node.Env) {
	for s.backlog.len() > 0 && s.mayInject() {
		r, _ := s.backlog.pop()
		s.seq++
		p := &pending{request: r, first: env.Now(), rto: s.rto()}
		if s.n.cfg.Scheme == BackPressure {
			// Never sent again: the timeout only forgets it, late.
			p.rto = s.n.cfg.MaxRTO
		}
		s.out[s.seq] = p
		s.n.Stats.Injected++
		s.transmit(env, s.seq, p)
	}
}

// transmit sends (or sends again) one request and arms its timeout.
func (s *source) transmit(env node.Env, seq uint64, p *pending) {
	m := &wire.CCRequest{Seq: seq, Key: p.key, Source: s.n.router.Self(), Rate: uint64(1000 * s.rate()), Payload: p.payload}
	s.n.route(env, m, "")
	if _, ok := s.out[seq]; ok { // not answered here at once
		env.After(p.rto, retransmitTimer{seq, p.retries})
	}
}

// Rate is the source's request rate that queues compare (x): the
// generator's under None, else the window over the round trip.
func (n *Node) Rate() float64 { return n.src.rate() }

func (s *source) rate() float64 {
	if s.n.cfg.Scheme == None {
		return s.n.cfg.Offered
	}
	rtt := s.rtt.SRTT
	if rtt <= 0 {
		rtt = s.n.cfg.MinRTO
	}
	return s.window / rtt.Seconds()
}

// rto is the retransmission timeout: srtt + 4·rttvar within bounds, and
// MaxRTO until there is a sample.
func (s *source) rto() time.Duration {
	if s.rtt.SRTT == 0 {
		return s.n.cfg.MaxRTO / 4
	}
	return min(max(s.rtt.SRTT+4*s.rtt.RTTVar, s.n.cfg.MinRTO), s.n.cfg.MaxRTO)
}

func (s *source) acked(env node.Env, m *wire.CCAck) {
	p := s.out[m.Seq]
	if p == nil {
		return // the ack of a retransmission's twin, or of a request given up
	}
	delete(s.out, m.Seq)
	now := env.Now()
	st := &s.n.Stats
	st.Acked++
	st.DelaySum += now.Sub(p.first)
	st.HopsSum += uint64(m.Hops)
	if m.Hops == 0 {
		st.AckedHere++
	}
	if p.retries == 0 { // Karn: only a request sent once times the ring
		s.rtt.Observe(now.Sub(p.first))
	}
	switch {
	case m.Marked:
		st.AckedMarked++
		if s.n.cfg.Scheme == Marking {
			s.decrease(now)
		}
	case s.n.cfg.Scheme == Loss || s.n.cfg.Scheme == Marking:
		s.window = min(s.window+s.n.cfg.Increase/s.window, s.n.cfg.MaxWindow)
	}
	s.inject(env)
}

// decrease multiplies the window by c−, at most once per round trip: the
// marks one congested queue sets on a burst of requests are one signal.
func (s *source) decrease(now time.Time) {
	if now.Sub(s.lastDecrease) < s.rtt.SRTT {
		return
	}
	s.window = max(1, s.window*s.n.cfg.Decrease)
	s.lastDecrease = now
}

func (s *source) timedOut(env node.Env, t retransmitTimer) {
	p := s.out[t.seq]
	if p == nil || p.retries != t.attempt {
		return // answered, or already sent again
	}
	cfg := &s.n.cfg
	if cfg.Scheme == BackPressure || p.retries >= cfg.MaxRetries {
		// Back-pressure loses nothing in the queues, so a request this
		// late is lost with a node.
		delete(s.out, t.seq)
		s.n.Stats.Lost++
		s.inject(env)
		return
	}
	if cfg.Scheme != None {
		// Without control, a source sends again what timed out, as an
		// application that wants its answer does, and keeps its rate.
		s.decrease(env.Now())
	}
	s.n.Stats.Retransmits++
	p.retries++
	if cfg.Scheme != None {
		p.rto = min(2*p.rto, cfg.MaxRTO)
	}
	s.transmit(env, t.seq, p)
}
