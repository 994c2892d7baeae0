package tapestry

import (
	"slices"
	"time"

	"triad/internal/fault"
	"triad/internal/node"
	"triad/internal/rpc"
	"triad/internal/wire"
)

// benchRun is a TapBench in progress: the routing microbenchmark of §V-B1
// (Figs. 11 and 12), which sends messages through the node's router as an
// application would and times each hop's acknowledgement.
type benchRun struct {
	m             *wire.TapBench
	in            node.MsgIn
	payload       []byte
	started       time.Time
	sent          uint32
	acked, failed uint64
	inFlight      uint32
	rtts          []time.Duration
	finished      bool
}

// maxBenchSamples bounds the round trips a benchmark keeps for its
// percentiles (the first ones).
const maxBenchSamples = 1 << 20

// bench starts a TapBench: Window routes in flight, each replaced when
// its hop acknowledges it, until Count have been sent.
func (n *Node) bench(env node.Env, in node.MsgIn, m *wire.TapBench) {
	if n.benchRunning {
		rpc.RespondError(env, in, n.self, fault.CodeBusy, "tapestry: a benchmark is already running")
		return
	}
	if m.Count == 0 || m.Count > wire.MaxTapBenchCount || m.Size > wire.MaxTapPayload || m.Window == 0 || m.Window > wire.MaxTapBenchWindow {
		rpc.RespondError(env, in, n.self, fault.CodeBadRequest, "tapestry: a benchmark wants 1 to 10,000,000 messages of at most 1 MiB, 1 to 4,096 in flight")
		return
	}
	n.benchRunning = true
	b := &benchRun{m: m, in: in, payload: make([]byte, m.Size), started: env.Now()}
	for b.sent < m.Count && b.inFlight < m.Window {
		n.benchSend(env, b)
	}
}

// benchSend routes one message of the benchmark.
func (n *Node) benchSend(env node.Env, b *benchRun) {
	b.sent++
	next, level, root := n.table.nextHop(0, b.m.Key, false, nil)
	if root {
		b.acked++ // routed to itself: no hop to time
		n.benchNext(env, b)
		return
	}
	m := &wire.TapRoute{Op: wire.TapToNode, Key: b.m.Key, App: AppDOLR, Origin: n.self, Level: uint32(level), Hops: 1, Payload: b.payload}
	b.inFlight++
	sent := env.Now()
	ok := n.call(env, next, m, 0, func(env node.Env, _ wire.Msg, err error) {
		b.inFlight--
		if err != nil {
			b.failed++
		} else {
			b.acked++
			if len(b.rtts) < maxBenchSamples {
				b.rtts = append(b.rtts, env.Now().Sub(sent))
			}
		}
		n.benchNext(env, b)
	})
	if !ok {
		b.inFlight--
		b.failed++
	}
}

// benchNext sends the next message, or answers when all are acknowledged.
func (n *Node) benchNext(env node.Env, b *benchRun) {
	if b.sent < b.m.Count {
		n.benchSend(env, b)
		return
	}
	if b.inFlight > 0 || b.finished {
		return
	}
	b.finished = true
	n.benchRunning = false
	slices.Sort(b.rtts)
	q := func(p float64) uint64 {
		if len(b.rtts) == 0 {
			return 0
		}
		return uint64(b.rtts[int(p*float64(len(b.rtts)-1))] / time.Microsecond)
	}
	rpc.Respond(env, b.in, n.self, &wire.TapBenchDone{Acked: b.acked, Failed: b.failed,
		Micros: uint64(env.Now().Sub(b.started) / time.Microsecond), P50Micros: q(0.5), P90Micros: q(0.9)})
}
