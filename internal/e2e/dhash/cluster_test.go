package dhash_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"triad/internal/e2e"
)

// clusterNodes is the nodes of TestClusterKillRestart.
const clusterNodes = 8

// TestMain removes the binary the tests built (e2e.Build).
func TestMain(m *testing.M) { os.Exit(e2e.Main(m)) }

// TestClusterKillRestart runs 8 node processes, SIGKILLs 2, restarts one
// of them from its data directory alone, and checks that the ring heals
// each time and that lookups find the right node.
func TestClusterKillRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 8 processes; skipped in -short mode")
	}
	c := e2e.NewCluster(t)
	ports := e2e.FreePorts(t, clusterNodes)
	addr := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[i]) }
	data := func(i int) string { return filepath.Join(c.Dir, fmt.Sprintf("data%d", i)) }
	name := func(i int) string { return fmt.Sprintf("node%d", i) }

	start := time.Now()
	nodes := []*e2e.Node{c.Start(name(0), addr(0), data(0), "")}
	for i := 1; i < clusterNodes; i++ {
		nodes = append(nodes, c.Start(name(i), addr(i), data(i), addr(0)))
	}
	c.WaitConsistent("after start", 30*time.Second)
	c.CheckLookup(addr(clusterNodes - 1))

	// Two crashes, neither of them the node the others joined through.
	victims := []int{3, 6}
	for _, i := range victims {
		nodes[i].Crash(t)
	}
	c.WaitConsistent("after killing "+name(victims[0])+" and "+name(victims[1]), 30*time.Second)

	// The first victim comes back from its data directory alone, at the
	// same ring positions.
	back := victims[0]
	oldIDs := nodes[back].IDs
	nodes[back] = c.Start(name(back), addr(back), data(back), "")
	if !slices.Equal(nodes[back].IDs, oldIDs) {
		t.Fatalf("%s restarted with vnode IDs %v, want %v", name(back), nodes[back].IDs, oldIDs)
	}
	c.WaitConsistent("after restarting "+name(back), 30*time.Second)
	c.CheckLookup(addr(1))
	c.CheckLookup(addr(back))
	t.Logf("whole test took %v", time.Since(start).Round(time.Millisecond))
}
