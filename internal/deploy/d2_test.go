package deploy_test

import (
	"bytes"
	"crypto/sha256"
	"math/rand/v2"
	"testing"
	"time"

	"triad/internal/d2"
	"triad/internal/deploy"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/sim"
	"triad/internal/wire"
)

// Hosts built with Options.D2 run D2 beside the ring on their storage's
// D2 engine: a block put through one host is read back through another,
// and it sits in D2's engines, not the hosts' own.
func TestHostsRunD2(t *testing.T) {
	// As many hosts as replicas: every host holds every block, and the
	// ring wraps inside each successor list (triad up runs 3).
	const n = 3
	s := sim.New(sim.Config{Seed: 3, DecodeMessages: true}, sim.NewTopology(n, 3))
	var hosts []*sim.Host
	for i := 0; i < n; i++ {
		o := deploy.DefaultOptions()
		o.Vnodes = 2
		c := d2.DefaultConfig()
		c.Stabilize, c.FixLinks = 5*time.Second, 5*time.Second
		c.CheckPeers = false // the test puts through the hosts' own API, unsigned
		o.D2 = &c
		boot := node.Addr("")
		if i > 0 {
			boot = hosts[0].Addr
		}
		h, err := s.AddHost(deploy.Factory(o, func() node.Addr { return boot }))
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, h)
		s.RunFor(time.Second)
	}
	for deadline := s.Now() + 10*time.Minute; s.Now() < deadline; s.RunFor(10 * time.Second) {
		joined := 0
		for _, h := range hosts {
			if deploy.Of(h).D2.Joined() {
				joined++
			}
		}
		if joined == n {
			break
		}
	}
	s.RunFor(20 * time.Second) // successor lists fill up

	// Whichever host owns a key, its block lands on all three.
	r := rand.New(rand.NewPCG(2, 2))
	for i := 0; i < 12; i++ {
		k := id.Random(r, d2.KeyBytes)
		gw := hosts[i%n]
		copies, done := 0, false
		s.Do(gw, func(env node.Env) {
			deploy.Of(gw).D2.Put(env, k, []byte{byte(i)}, wire.D2PutReplace, nil, func(_ node.Env, c int, err error) { copies, done = c, err == nil })
		})
		s.RunFor(10 * time.Second)
		if !done || copies != n {
			t.Errorf("key %d through %s: done %v, %d copies, want %d", i, gw.Addr, done, copies, n)
		}
		// Asked through another host, the key's holders by placement are
		// all three too (gets, deletes and stat go to these).
		other := hosts[(i+1)%n]
		sum := sha256.Sum256([]byte{byte(i)})
		var holding []string
		s.Do(other, func(env node.Env) {
			deploy.Of(other).D2.Stat(env, k, sum[:], func(_ node.Env, hs []wire.D2Holder, err error) {
				for _, h := range hs {
					if h.State == wire.D2HolderOK {
						holding = append(holding, string(h.Node.Node.Addr))
					}
				}
			})
		})
		s.RunFor(10 * time.Second)
		if len(holding) != n {
			t.Errorf("key %d asked through %s: holders %v, want all %d hosts", i, other.Addr, holding, n)
		}
	}

	data := []byte("a block of a triad fs volume")
	k := id.Random(rand.New(rand.NewPCG(1, 1)), d2.KeyBytes)
	sum := sha256.Sum256(data)
	var copies int
	var putErr error
	put := false
	s.Do(hosts[0], func(env node.Env) {
		deploy.Of(hosts[0]).D2.Put(env, k, data, wire.D2PutReplace, nil, func(_ node.Env, c int, err error) { copies, putErr, put = c, err, true })
	})
	s.RunFor(30 * time.Second)
	if !put || putErr != nil || copies != 3 {
		t.Fatalf("put through %s: done %v, %d copies, %v; want 3 copies", hosts[0].Addr, put, copies, putErr)
	}
	var got []byte
	var getErr error
	s.Do(hosts[n-1], func(env node.Env) {
		deploy.Of(hosts[n-1]).D2.Get(env, k, sum[:], func(_ node.Env, b []byte, err error) { got, getErr = b, err })
	})
	s.RunFor(30 * time.Second)
	if getErr != nil || !bytes.Equal(got, data) {
		t.Fatalf("get through %s: %q, %v", hosts[n-1].Addr, got, getErr)
	}
	held := 0
	for _, h := range hosts {
		if _, _, err := d2.EngineOf(h.Storage()).Get(k); err == nil {
			held++
		}
		if _, _, err := h.Storage().Engine().Get(k); err == nil {
			t.Fatalf("%s keeps D2's block in its own engine", h.Addr)
		}
	}
	if held != 3 {
		t.Fatalf("%d D2 engines hold the block, want 3", held)
	}
}
