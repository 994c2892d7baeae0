package maint_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"triad/internal/deploy"
	"triad/internal/id"
	"triad/internal/maint"
	"triad/internal/sim"
)

// honestCopies counts the running hosts other than liar holding key's
// bytes.
func (c *cluster) honestCopies(key id.ID, liar *sim.Host) int {
	n := 0
	for _, h := range c.up() {
		if h == liar {
			continue
		}
		if data, meta, err := h.Storage().Engine().Get(key); err == nil && !meta.Opaque && id.Key(data) == key {
			n++
		}
	}
	return n
}

// Issue 27: a host that acknowledges stores and keeps nothing, or keeps
// the keys in its Merkle tree only (a lying TreeInfo), or returns forged
// bytes, left every block it acknowledged at one real copy: maintenance
// trusted its tree. Audits find it out; its neighbours take it for no
// machine and make the second copy on the next honest host. Every block
// ends at 2 honest copies within 10 minutes (rounds a minute apart), the
// liar is a suspect to the hosts that audit it, and no honest host is.
// With audits off, the blocks it holds stay at one honest copy.
func TestAuditsRepairAroundALiar(t *testing.T) {
	for _, lie := range []sim.Lie{sim.AckAndDrop, sim.LyingTree, sim.Forge} {
		for _, audits := range []int{2, 0} {
			t.Run(fmt.Sprintf("%v/audits=%d", lie, audits), func(t *testing.T) {
				c := newCluster(t, testOptions{hosts: 10, seed: 27, liar: 3, lie: lie, noAudits: audits == 0})
				liar := c.s.Hosts()[3]
				c.put(100, rand.New(rand.NewPCG(27, 3)))
				c.s.RunFor(10 * time.Minute)
				var short int
				for _, key := range c.keys {
					if c.honestCopies(key, liar) < 2 {
						short++
					}
				}
				now := c.s.Epoch().Add(c.s.Now())
				var suspected, wrong int
				var st maint.Stats
				for _, h := range c.up() {
					m := deploy.Of(h).Maint
					st.Audits += m.Stats.Audits
					st.AuditsFailed += m.Stats.AuditsFailed
					if m.Suspect(now, liar.Addr) {
						suspected++
					}
					for _, o := range c.up() {
						// The liar's own opinions are its business: it
						// checks proofs against its forged bytes.
						if h != liar && o != liar && m.Suspect(now, o.Addr) {
							wrong++
						}
					}
				}
				t.Logf("%d of %d blocks under 2 honest copies; %d audits, %d failed; the liar suspected by %d hosts, honest hosts by %d",
					short, len(c.keys), st.Audits, st.AuditsFailed, suspected, wrong)
				if audits == 0 {
					if short == 0 {
						t.Errorf("without audits no block is short of an honest copy: the liar does not lie")
					}
					return
				}
				if short > 0 {
					t.Errorf("%d of %d blocks under 2 honest copies 10 minutes on", short, len(c.keys))
				}
				if suspected < 2 {
					t.Errorf("the liar is a suspect to %d hosts, want its 2 partners at least", suspected)
				}
				if wrong > 0 {
					t.Errorf("honest hosts suspected %d times", wrong)
				}
			})
		}
	}
}

// Where our copy is a fragment, an audit fetches the partner's fragment
// and checks it against the descriptor its key names. A host returning
// forged fragments (its shard's last byte flipped under its real header)
// is a suspect to both its partners; in the same ring with no liar, no
// fragment audit fails (each partner holds another index, which checks).
func TestFragmentAuditsFindAForger(t *testing.T) {
	for _, lie := range []sim.Lie{sim.Forge, 0} {
		t.Run(fmt.Sprint(lie), func(t *testing.T) {
			c := newCluster(t, testOptions{hosts: 16, seed: 28, liar: 5, lie: lie})
			liar := c.s.Hosts()[5]
			c.putFragments(30, rand.New(rand.NewPCG(28, 5)))
			c.s.RunFor(5 * time.Minute)
			now := c.s.Epoch().Add(c.s.Now())
			var audits, failed uint64
			suspected, wrong := 0, 0
			for _, h := range c.up() {
				m := deploy.Of(h).Maint
				if h == liar && lie != 0 {
					continue // its own opinions
				}
				audits += m.Stats.Audits
				failed += m.Stats.AuditsFailed
				for _, o := range c.up() {
					switch {
					case o == liar && lie != 0 && m.Suspect(now, o.Addr):
						suspected++
					case m.Suspect(now, o.Addr):
						wrong++
					}
				}
			}
			t.Logf("%d fragment audits by honest hosts, %d failed; the forger suspected by %d, honest hosts by %d", audits, failed, suspected, wrong)
			if audits == 0 {
				t.Fatal("no audit ran")
			}
			if lie != 0 && suspected < 2 {
				t.Errorf("the forger is a suspect to %d hosts, want its 2 partners at least", suspected)
			}
			if wrong > 0 || lie == 0 && failed > 0 {
				t.Errorf("honest hosts suspected %d times, %d audits failed", wrong, failed)
			}
		})
	}
}
