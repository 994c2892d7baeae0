package d2

import (
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/wire"
)

// Route is where a lookup ended: the key's owner (its successor), the
// owner's range (Lo, Owner.Pos] and the owner's successors, which hold
// the key's other replicas.
type Route struct {
	Owner wire.D2Ref
	Lo    id.ID
	Succs []wire.D2Ref
	Hops  int // D2FindSucc steps taken
}

// Holders is the owner and its successors up to r nodes: where the key's
// replicas live.
func (r Route) Holders(replicas int) []wire.D2Ref {
	l := append([]wire.D2Ref{r.Owner}, r.Succs...)
	return dedupe(l, "", replicas)
}

// Done receives a lookup's outcome.
type Done func(env node.Env, r Route, err error)

// lookupStep is a lookup in progress: iterative, the node that started it
// asks each step itself (a timeout there declares the step's node dead and
// the lookup goes on from the best node left).
type lookupStep struct {
	key     id.ID
	hops    int
	retries int
	done    Done
	// probe marks a maintenance lookup (probeOtherRing): its steps count
	// in RingProbeMsgs, not among the lookups clients cause.
	probe bool
}

const lookupRetries = 3

// Lookup finds k's owner, iteratively: this node asks the nearest node it
// knows before k, which answers with the owner or a nearer node, and so on.
func (n *Node) Lookup(env node.Env, k id.ID, done Done) {
	n.Stats.Lookups++
	if !n.joined {
		n.Stats.LookupFailures++
		done(env, Route{}, ErrNotJoined)
		return
	}
	l := &lookupStep{key: k, done: done}
	if r := n.findSucc(k); r.Done {
		done(env, Route{Owner: r.Owner, Lo: r.Lo, Succs: r.Succs}, nil)
		return
	} else {
		n.step(env, l, r.Next, true)
	}
}

// lookupFrom is a lookup that starts at the node at addr (a joiner's
// bootstrap, whose position it does not know yet).
func (n *Node) lookupFrom(env node.Env, addr node.Addr, k id.ID, done Done) {
	n.Stats.Lookups++
	n.step(env, &lookupStep{key: k, done: done}, wire.D2Ref{Node: wire.NodeRef{Addr: addr}}, false)
}

// step asks at one step of l.
func (n *Node) step(env node.Env, l *lookupStep, at wire.D2Ref, checkProgress bool) {
	if l.hops >= n.cfg.MaxHops {
		n.Stats.LookupFailures++
		l.done(env, Route{}, ErrNoRoute)
		return
	}
	l.hops++
	if l.probe {
		n.Stats.RingProbeMsgs++
	} else {
		n.Stats.LookupHops++
	}
	ok := n.call(env, at.Node.Addr, &wire.D2FindSucc{Key: l.key}, func(env node.Env, reply wire.Msg, err error) {
		next, isNext := reply.(*wire.D2Next)
		switch {
		case err != nil || !isNext:
			n.retry(env, l)
		case next.Done:
			l.done(env, Route{Owner: next.Owner, Lo: next.Lo, Succs: next.Succs, Hops: l.hops}, nil)
		case next.Next.IsZero() || checkProgress && !next.Next.Pos.Between(at.Pos, l.key) && next.Next.Pos != l.key:
			n.Stats.LookupFailures++
			l.done(env, Route{}, ErrNoRoute) // no progress: a loop
		default:
			n.step(env, l, next.Next, true)
		}
	})
	if !ok {
		n.Stats.LookupFailures++
		l.done(env, Route{}, ErrBusy)
	}
}

// retry goes on from this node's best choice after a step failed.
func (n *Node) retry(env node.Env, l *lookupStep) {
	// A probe goes on from no other node: from this node's own lists it
	// would end on this node's own ring and prove nothing about the peer.
	if l.retries++; l.retries > lookupRetries || !n.joined || l.probe {
		if !l.probe {
			n.Stats.LookupFailures++
		}
		l.done(env, Route{}, ErrNoRoute)
		return
	}
	if r := n.findSucc(l.key); r.Done {
		l.done(env, Route{Owner: r.Owner, Lo: r.Lo, Succs: r.Succs, Hops: l.hops}, nil)
	} else {
		n.step(env, l, r.Next, true)
	}
}
