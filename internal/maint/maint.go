package maint

import (
	"errors"
	"time"

	"triad/internal/fault"
	"triad/internal/host"
	"triad/internal/id"
	"triad/internal/merkle"
	"triad/internal/node"
	"triad/internal/ring"
	"triad/internal/rpc"
	"triad/internal/store"
	"triad/internal/wire"
)

// Maint is local maintenance on one host.
type Maint struct {
	cfg     Config
	chord   *ring.Chord
	rt      *host.Host
	state   map[*ring.Vnode]*vnodeState
	listMax int  // the ring's predecessor-list length
	paused  bool // by the operator: no new rounds or sweeps
	// aside are keys rounds leave alone for a while (setAside): fragments
	// that could not be rebuilt, whole blocks a fragment arc met. Bounded:
	// cleared when full.
	aside map[id.ID]time.Time
	// The repair budget: a token bucket of bytes, refilled at Budget per
	// second up to a second's worth; work waits while it is empty.
	tokens    float64
	filled    time.Time
	waiting   []func(node.Env) // pumps to run when tokens come back
	resume    bool             // a budgetTimer is set
	transfers int              // in flight, under a budget: at most one
	// The check timer: when it fires (zero: none set), and its cancel.
	timerAt     time.Time
	cancelTimer func()
	checking    bool                  // in check: a round ending inside it does not recurse
	settleAt    time.Time             // a neighbour change starts rounds from then on
	clean       map[syncKey]syncRoots // the last clean synchronizations (syncMemo)
	// Audits: suspects until when, keys partners said they lacked and
	// when first, partners' first unanswered audit since their last answer.
	// Each bounded (audit.go).
	suspects map[node.Addr]time.Time
	pending  map[auditKey]time.Time
	silent   map[node.Addr]time.Time
	now      time.Time // the time of the last event maintenance saw (Status)
	Stats    Stats
}

// vnodeState is one vnode's maintenance: the round in progress, and what
// the last one saw.
type vnodeState struct {
	round      *round
	succ, pred wire.NodeRef // the neighbours of the last round
	plan       []syncTask   // its synchronizations: partners and arcs
	due        time.Time    // the next periodic round
	sweep      *sweep       // global maintenance in progress
	sweepDue   time.Time
	sweepFrom  id.ID     // where the last sweep stopped short, if it did
	lastRound  time.Time // when the last round ended
}

// New registers local maintenance on the host that runs chord.
func New(cfg Config, chord *ring.Chord) (*Maint, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Maint{cfg: cfg, chord: chord, rt: chord.Runtime(), state: make(map[*ring.Vnode]*vnodeState), listMax: chord.Config().Preds}
	if err := m.rt.Register(wire.TypeTreeQuery, m); err != nil {
		return nil, err
	}
	return m, nil
}

// Start implements host.Protocol.
func (m *Maint) Start(env node.Env) {
	for _, v := range m.chord.Vnodes() {
		// The first round waits for the ring to settle: a neighbour change
		// starts it sooner.
		m.state[v] = &vnodeState{due: env.Now().Add(m.jitter(env, m.cfg.Interval)), sweepDue: env.Now().Add(m.jitter(env, m.sweepInterval()))}
	}
	// The ring tells when a predecessor the plan reads changes (range
	// starts up to p_l), besides the successor.
	m.chord.OnNeighbours(max(m.cfg.Replicas+1, m.cfg.Fragments), m.neighboursChanged)
	// A restarted host's lists start from the peers it saved, a few of
	// them: a round now could take a range far wider than its own. Its
	// first round waits until the ring has settled.
	m.neighboursChanged(env)
	m.check(env)
}

// Stop implements host.Protocol.
func (m *Maint) Stop(node.Env) {}

// PeerDown implements host.Protocol: a round with that neighbour fails on
// its own calls.
func (m *Maint) PeerDown(node.Env, node.Addr) {}

// Timer implements host.Protocol.
func (m *Maint) Timer(env node.Env, t node.Timer) bool {
	switch t.(type) {
	case budgetTimer:
		m.resume = false
		m.wake(env)
	case checkTimer:
		m.timerAt = time.Time{}
		m.check(env)
	default:
		return false
	}
	return true
}

// Validate implements host.Validator.
func (m *Maint) Validate(msg wire.Msg) error {
	switch msg := msg.(type) {
	case *wire.TreeQuery:
		if _, err := merkle.DecodePrefix(msg.Prefix); err != nil {
			return err
		}
		if msg.Lo.Width() != id.Bytes || msg.Hi.Width() != id.Bytes {
			return errors.New("maint: tree query with a malformed range")
		}
	case *wire.Audit:
		if msg.Key.Width() != id.Bytes || len(msg.Nonce) != wire.AuditNonceBytes {
			return errors.New("maint: malformed audit")
		}
	case *wire.AuditProof:
		if msg.Held && len(msg.Hash) != wire.AuditHashBytes {
			return errors.New("maint: audit proof with a malformed hash")
		}
	case *wire.TreeInfo:
		if len(msg.Hash) != 0 && len(msg.Hash) != wire.TreeHashBytes {
			return errors.New("maint: tree node with a malformed hash")
		}
		if len(msg.Expiries) != 0 && len(msg.Expiries) != len(msg.Keys) {
			return errors.New("maint: tree node with expiry times that do not pair with its keys")
		}
		if len(msg.Sizes) != 0 && len(msg.Sizes) != len(msg.Keys) {
			return errors.New("maint: tree node with sizes that do not pair with its keys")
		}
	}
	return nil
}

// Receive implements host.Protocol: a neighbour's TreeQuery is answered
// from our tree, read off the event loop; an operator's status request and
// pause or resume at once.
func (m *Maint) Receive(env node.Env, in node.MsgIn) {
	if in.Env.Kind != wire.Request {
		return
	}
	m.now = env.Now()
	me := wire.NodeRef{Addr: m.rt.Addr()}
	switch msg := in.Env.Msg.(type) {
	case *wire.GetMaintStatus:
		// What the host stores is the engine's to say: read on the
		// driver's side, then answered with the counters.
		env.Offload(&work{
			run: func(e store.Engine) (any, error) { return e.Stats(), nil },
			done: func(env node.Env, res any, err error) {
				out := m.Status()
				if st, ok := res.(store.Stats); ok && err == nil {
					out.Counters = append(out.Counters, wire.Counter{Name: "stored_objects", Value: uint64(st.Objects)},
						wire.Counter{Name: "stored_bytes", Value: uint64(st.Usage)})
				}
				rpc.Respond(env, in, me, out)
			},
		})
		return
	case *wire.MaintControl:
		m.paused = msg.Pause
		rpc.Respond(env, in, me, &wire.Ack{})
		m.check(env)
		return
	}
	if a, ok := in.Env.Msg.(*wire.Audit); ok {
		m.answerAudit(env, in, a)
		return
	}
	q, ok := in.Env.Msg.(*wire.TreeQuery)
	if !ok {
		return
	}
	p, _ := merkle.DecodePrefix(q.Prefix) // Validate checked it
	env.Offload(&work{
		run: func(e store.Engine) (any, error) { return describe(e, p, q.Lo, q.Hi) },
		done: func(env node.Env, res any, err error) {
			if err != nil {
				rpc.RespondError(env, in, wire.NodeRef{Addr: m.rt.Addr()}, fault.CodeInternal, err.Error())
				return
			}
			rpc.Respond(env, in, wire.NodeRef{Addr: m.rt.Addr()}, res.(*wire.TreeInfo))
		},
	})
}

// Work implements host.Protocol.
func (m *Maint) Work(env node.Env, done node.WorkDone) bool {
	w, ok := done.W.(*work)
	if !ok {
		return false
	}
	w.done(env, done.Result, done.Err)
	return true
}

// work is a read or write of the host's storage engine, run by the driver.
type work struct {
	run  func(store.Engine) (any, error)
	done func(env node.Env, res any, err error)
}

func (w *work) Run(s node.Storage) (any, error) { return w.run(s.Engine()) }
