package tapestry_test

import (
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/tapestry"
)

// TestJoinsMoveRootPointers: when many nodes join at once, every
// published object has a pointer at its new oracle root long before the
// next republish, also when the new root is reached through a hole
// filled on the way rather than at the old root.
func TestJoinsMoveRootPointers(t *testing.T) {
	m := newMesh(t, 4, 40, tapestry.DefaultConfig())
	r := m.s.Rand()
	type obj struct {
		key    id.ID
		server int
	}
	var objs []obj
	for i := 0; i < 10; i++ {
		server := i
		for j := 0; j < 10; j++ {
			k := id.Random(r, id.Bytes)
			objs = append(objs, obj{k, server})
			m.s.Do(m.hosts[server], func(env node.Env) { tap(m.hosts[server]).Publish(env, k, tapestry.AppDOLR, time.Time{}) })
		}
	}
	m.s.RunFor(20 * time.Second)
	for i := 0; i < 40; i++ {
		m.add()
	}
	m.s.RunFor(2 * time.Minute) // republish is every 10 minutes
	_, ids := m.live()
	byID := map[id.ID]int{}
	for i, h := range m.hosts {
		byID[tap(h).Self().ID] = i
	}
	missing := 0
	for _, o := range objs {
		root := m.hosts[byID[tapestry.Root(ids, o.key, 4)]]
		servers, _ := tap(root).Pointers(o.key)
		found := false
		for _, s := range servers {
			found = found || s.Addr == m.hosts[o.server].Addr
		}
		if !found {
			missing++
		}
	}
	if missing > 0 {
		t.Errorf("%d of %d objects have no pointer at their root after 40 joins", missing, len(objs))
	}
}
