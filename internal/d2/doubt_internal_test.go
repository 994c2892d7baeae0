package d2

import (
	"math/rand/v2"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/node"
)

// TestDoubtsStayNarrow: a node that sees the same few arcs come into its
// range again and again (real churn: the same neighbours killed and back)
// keeps one doubt per arc, and past maxDoubts distinct arcs it merges the
// two nearest, so its own range never comes under a doubt it did not
// grow into. Merging the oldest two instead grew arcs over every node's
// own range within minutes of triad chaos --d2, and no holder vouched.
func TestDoubtsStayNarrow(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	at := func(f uint64) id.ID { // f/1000 of the way round
		b := make([]byte, KeyBytes)
		v := f * (1 << 54) / 1000 * 1024
		for i := 0; i < 8; i++ {
			b[i] = byte(v >> (56 - 8*i))
		}
		x, _ := id.FromBytes(b)
		return x
	}
	n := &Node{cfg: DefaultConfig()}
	env := &fakeClock{now: time.Unix(1000, 0)}
	own := doubt{lo: at(900), hi: at(999)} // keys the node never doubts
	for i := 0; i < 1500; i++ {
		lo := uint64(r.IntN(890))
		n.addDoubt(env, at(lo), at(lo+uint64(1+r.IntN(9))))
		env.now = env.now.Add(time.Millisecond)
	}
	if len(n.doubts) > maxDoubts {
		t.Fatalf("%d doubts kept, want at most %d", len(n.doubts), maxDoubts)
	}
	for _, d := range n.doubts {
		if arcsMeet(own.lo, own.hi, d.lo, d.hi) {
			t.Fatalf("a doubt (%s, %s] reaches the arc no failure grew: merged too wide", d.lo.Short(), d.hi.Short())
		}
	}
	n2 := &Node{cfg: DefaultConfig()}
	for i := 0; i < 1000; i++ {
		n2.addDoubt(env, at(100), at(200))
		n2.addDoubt(env, at(300), at(400))
	}
	if len(n2.doubts) != 2 {
		t.Errorf("the same two arcs doubted 1000 times each: %d doubts kept, want 2", len(n2.doubts))
	}
}

// fakeClock is an env whose only working method is Now.
type fakeClock struct {
	node.Env
	now time.Time
}

func (f *fakeClock) Now() time.Time { return f.now }
