package d2_test

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"triad/internal/d2"
	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/wire"
)

// send makes from call to with m and returns the reply or the error.
func (c *cluster) send(from, to int, m wire.Msg) (wire.Msg, error) {
	c.t.Helper()
	var (
		reply wire.Msg
		err   error
		done  bool
	)
	n := c.node(c.hosts[from])
	c.s.Do(c.hosts[from], func(env node.Env) {
		n.Host().Call(env, c.hosts[to].Addr, n.Me().Node, id.ID{}, m, 5*time.Second, func(env node.Env, r wire.Msg, e error) {
			reply, err, done = r, e, true
		})
	})
	c.s.RunFor(6 * time.Second)
	if !done {
		c.t.Fatalf("%v never answered", m.Type())
	}
	return reply, err
}

func code(err error) fault.Code {
	var e *wire.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return 0
}

// TestBadInput: keys of the wrong width, blocks past the size bound, puts
// of an unknown mode or IfHash without a SHA-256, and gets and stats
// without one are refused as bad requests and counted; a
// position claimed for another node is refused; a node that moves twice
// within the probe interval is refused the second time.
func TestBadInput(t *testing.T) {
	cfg := still()
	cfg.BlockBytes = 8 << 10 // a bound under the codec's, so the node is what refuses
	c := newCluster(t, 11, 6, cfg, skewed)
	r := rand.New(rand.NewPCG(11, 11))
	target := c.node(c.hosts[2])
	for _, m := range []wire.Msg{
		&wire.D2FindSucc{Key: id.Random(r, id.Bytes)},
		&wire.D2Put{Key: id.Random(r, 32), Data: []byte("x")},
		&wire.D2Put{Key: id.Random(r, d2.KeyBytes), Data: make([]byte, cfg.BlockBytes+1)},
		&wire.D2Put{Key: id.Random(r, d2.KeyBytes), Data: []byte("x"), Mode: wire.D2PutModes},
		&wire.D2Put{Key: id.Random(r, d2.KeyBytes), Data: []byte("x"), Mode: wire.D2PutIfHash},
		&wire.D2Put{Key: id.Random(r, d2.KeyBytes), Data: []byte("x"), Mode: wire.D2PutIfHash, Prev: []byte("short")},
		&wire.D2Put{Key: id.Random(r, d2.KeyBytes), Data: []byte("x"), Mode: wire.D2PutReplace, Prev: []byte("short")},
		&wire.D2Get{Key: id.Random(r, d2.KeyBytes)},
		&wire.D2Stat{Key: id.Random(r, 20), Hash: make([]byte, 32)},
		&wire.D2Stat{Key: id.Random(r, d2.KeyBytes), Hash: make([]byte, 20)},
		&wire.D2Keys{Lo: id.Random(r, d2.KeyBytes), Hi: id.Random(r, 8), Max: 10},
		&wire.D2Join{Self: wire.D2Ref{Node: c.node(c.hosts[1]).Me().Node, Pos: id.Random(r, 20)}},
	} {
		before := target.Stats.BadRequests
		if _, err := c.send(1, 2, m); code(err) != fault.CodeBadRequest {
			t.Errorf("%v: %v, want a bad request", m.Type(), err)
		}
		if target.Stats.BadRequests != before+1 {
			t.Errorf("%v: not counted", m.Type())
		}
	}

	// A join that claims another node's identity.
	other := c.node(c.hosts[3]).Me()
	if _, err := c.send(1, 2, &wire.D2Join{Self: other}); code(err) != fault.CodeBadRequest || target.Stats.RefusedPositions != 1 {
		t.Errorf("a join in another node's name: %v, %d refused", err, target.Stats.RefusedPositions)
	}

	// A node seen at three positions within a probe interval: the second
	// change is refused.
	m := 4
	if c.node(c.hosts[m]).Me() == target.Pred() {
		m = 5 // the target's predecessor has been seen: one change less to refuse
	}
	mover := c.node(c.hosts[m]).Me()
	for i, want := range []fault.Code{0, 0, fault.CodeBusy} {
		mover.Pos = id.Random(r, d2.KeyBytes)
		_, err := c.send(m, 2, &wire.D2Join{Self: mover})
		if code(err) != want {
			t.Errorf("position %d: %v, want code %v", i, err, want)
		}
	}
	if target.Stats.MovesDropped != 1 {
		t.Errorf("%d moves dropped, want 1", target.Stats.MovesDropped)
	}
}
