package maint_test

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"triad/internal/deploy"
	"triad/internal/dhash"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/store"
	"triad/internal/wire"
)

func (m memTree) Get(key id.ID) ([]byte, store.Meta, error) {
	meta, err := m.Stat(key)
	return nil, meta, err
}

// forgedFragment is what anyone could once store under any key: a
// fragment whose header (format version 2) names key as its block, with
// made-up bytes as its shard. A fragment's header was all a host checked.
func forgedFragment(key id.ID, size int) []byte {
	b := []byte{2, 0, 7, 14}
	b = binary.LittleEndian.AppendUint64(b, uint64(size))
	b = key.AppendTo(b)
	return append(b, bytes.Repeat([]byte{0xf0}, (size+6)/7)...)
}

// wholeCopies counts the running hosts holding a whole copy of key.
func (c *cluster) wholeCopies(key id.ID) int {
	n := 0
	for _, h := range c.up() {
		if m, err := h.Storage().Engine().Stat(key); err == nil && !m.Opaque {
			n++
		}
	}
	return n
}

// getThroughEach gets key through every running host and returns the
// errors.
func (c *cluster) getThroughEach(key id.ID, data []byte) []string {
	var failed []string
	for _, h := range c.up() {
		var (
			got  []byte
			err  error
			done bool
		)
		c.s.Do(h, func(env node.Env) {
			deploy.Of(h).Blocks.Get(env, key, wire.RedundancyDefault, func(_ node.Env, b dhash.Block, e error) {
				got, err, done = b.Data, e, true
			})
		})
		for deadline := c.s.Now() + time.Minute; !done && c.s.Now() < deadline; {
			c.s.RunFor(100 * time.Millisecond)
		}
		if !done || err != nil || !bytes.Equal(got, data) {
			failed = append(failed, string(h.Addr)+": "+errString(err))
		}
	}
	return failed
}

func errString(err error) string {
	if err == nil {
		return "wrong or no data"
	}
	return err.Error()
}

// Issue 27, finding 1: a fragment planted on the host that becomes a
// whole block's replica holder when one of its two holders fails. Sent as
// a StoreBlock, as anyone may, the host refuses it, so that after the
// crash maintenance makes the second whole copy there. Put into its engine
// directly (as a host of an older version would have taken it), gets still
// return the block: a replica get that meets the fragment, which does not
// verify against the key, asks the other holder.
func TestPlantedFragmentIsNoReplica(t *testing.T) {
	for _, via := range []string{"StoreBlock", "engine"} {
		t.Run(via, func(t *testing.T) {
			c := newCluster(t, testOptions{hosts: 10, seed: 27})
			c.put(1, rand.New(rand.NewPCG(27, 1)))
			key := c.keys[0]
			succ := c.successors(key)
			data, meta, err := succ[0].Storage().Engine().Get(key)
			if err != nil || c.wholeCopies(key) != 2 {
				t.Fatalf("after the put: %d whole copies (%v)", c.wholeCopies(key), err)
			}
			next := succ[2]
			forged := forgedFragment(key, len(data))
			switch via {
			case "StoreBlock":
				attacker := succ[5]
				to := deploy.Of(next).Ring.Vnodes()[0].Self()
				var refusal error
				done := false
				c.s.Do(attacker, func(env node.Env) {
					n := deploy.Of(attacker)
					n.Host.Call(env, to.Addr, n.Ring.Vnodes()[0].Self(), to.ID,
						&wire.StoreBlock{Key: key, Data: forged, Expiry: meta.Expiry.UnixNano(), Fragment: true}, 0,
						func(_ node.Env, _ wire.Msg, err error) { refusal, done = err, true })
				})
				for deadline := c.s.Now() + time.Minute; !done && c.s.Now() < deadline; {
					c.s.RunFor(100 * time.Millisecond)
				}
				t.Logf("the planted fragment: %v", refusal)
			case "engine":
				if err := next.Storage().Engine().Put(key, forged, meta.Expiry, store.PutOptions{Opaque: true}); err != nil {
					t.Fatal(err)
				}
			}
			c.s.Crash(succ[0])
			c.s.RunFor(10 * time.Minute) // the ring notices; rounds run
			if failed := c.getThroughEach(key, data); len(failed) > 0 {
				t.Errorf("gets with a whole copy on %s: %v", succ[1].Addr, failed)
			}
			if via == "StoreBlock" {
				if n := c.wholeCopies(key); n != 2 {
					t.Errorf("%d whole copies after the crash and maintenance, want 2", n)
				}
			}
		})
	}
}
