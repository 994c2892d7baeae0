package tapestry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"triad/internal/e2e"

	"triad/internal/client"
	"triad/internal/id"
	"triad/internal/tapestry"
	"triad/internal/testutil"
	"triad/internal/wire"
)

// Settings of TestTapestryCluster: a republish of 20 s makes the pointer
// TTL 40 s; beacons every 5 s find a dead link well within that.
const (
	tapNodes     = 16
	tapServers   = 4
	tapObjects   = 1000
	tapRepublish = 20 * time.Second
	tapTTL       = 2 * tapRepublish
	tapWorkers   = 16 // locates in flight at once
	tapTimeout   = 15 * time.Second
)

// tapObject is an object published in the test.
type tapObject struct {
	Key    id.ID
	Data   []byte
	server string // address of the node that published it
}

// tapCluster is a e2e.DHash whose nodes run Tapestry.
type tapCluster struct {
	*e2e.DHash
	objects []tapObject
}

// locate routes to key from p (All: on to the root).
func (c *tapCluster) locate(cl *client.Client, key id.ID, all bool) (*wire.TapLocateDone, error) {
	ctx, cancel := context.WithTimeout(context.Background(), tapTimeout)
	defer cancel()
	m, err := cl.Call(ctx, &wire.TapLocate{Key: key, All: all, App: tapestry.AppDOLR})
	if err != nil {
		return nil, err
	}
	l, ok := m.(*wire.TapLocateDone)
	if !ok {
		return nil, fmt.Errorf("answered %T", m)
	}
	return l, nil
}

// table asks p for its Tapestry table and counters.
func (c *tapCluster) table(p *e2e.Node) (*wire.TapTable, map[string]uint64) {
	c.T.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	m, err := c.Client(p).Call(ctx, &wire.TapGetTable{})
	if err != nil {
		c.T.Fatalf("table of %s: %v", p.Name, err)
	}
	t := m.(*wire.TapTable)
	counters := map[string]uint64{}
	for _, x := range t.Counters {
		counters[x.Name] = x.Value
	}
	return t, counters
}

// locateAll locates every object from every node of via, tapWorkers at a
// time, and returns what went wrong for each object that was not found at
// its server (want(o) false: that it was found at all).
func (c *tapCluster) locateAll(via []*e2e.Node, objs []tapObject, want func(tapObject) bool) (problems []string) {
	clients := make([]*client.Client, len(via))
	for i, p := range via {
		clients[i] = c.Client(p)
	}
	type job struct {
		from int
		o    tapObject
	}
	jobs := make(chan job)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range tapWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				l, err := c.locate(clients[j.from], j.o.Key, false)
				var problem string
				switch {
				case err != nil:
					problem = err.Error()
				case want(j.o) && !l.Found:
					root := l.Root.Addr
					if _, p := c.ByAddr(root); p != nil {
						root = p.Name + " " + root // which node, for the logs
					}
					problem = fmt.Sprintf("not found at root %s after %d hops", root, l.Hops)
				case want(j.o) && (len(l.Servers) == 0 || l.Servers[0].Addr != j.o.server):
					problem = fmt.Sprintf("found at %v, published at %s", addrs(l.Servers), j.o.server)
				case !want(j.o) && l.Found:
					problem = fmt.Sprintf("found at %v", addrs(l.Servers))
				}
				if problem != "" {
					mu.Lock()
					problems = append(problems, fmt.Sprintf("%s from %s: %s", j.o.Key.Short(), via[j.from].Name, problem))
					mu.Unlock()
				}
			}
		}()
	}
	for i := range via {
		for _, o := range objs {
			jobs <- job{i, o}
		}
	}
	close(jobs)
	wg.Wait()
	return problems
}

func found(tapObject) bool { return true }

// checkTables holds every node of via's table to the live set, via itself
// (tapestry.CheckTable: no entry names a dead node, no entry is empty that
// a live node could fill), and returns the violations, a few per node.
func (c *tapCluster) checkTables(via []*e2e.Node) []string {
	tables := make([]*wire.TapTable, len(via))
	live := map[string]wire.NodeRef{}
	for i, p := range via {
		tables[i], _ = c.table(p)
		live[p.Addr] = tables[i].Self
	}
	var out []string
	for _, t := range tables {
		out = append(out, tapestry.CheckTable(t, tapestry.DefaultConfig().DigitBits, live, 3)...)
	}
	return out
}

// waitTablesAndLocates waits until every table of via is consistent with via
// (checkTables) and every node of via locates every one of objs.
func (c *tapCluster) waitTablesAndLocates(t *testing.T, via []*e2e.Node, objs []tapObject, within time.Duration, what string) {
	t.Helper()
	start := time.Now()
	var tables, problems []string
	if !testutil.Poll(within, func() bool {
		if tables = c.checkTables(via); len(tables) > 0 {
			return false
		}
		problems = c.locateAll(via, objs, found)
		return len(problems) == 0
	}) {
		t.Fatalf("%s: not consistent %v later: %d table violations:\n  %s\n%d locates failed:\n  %s\n%s",
			what, within, len(tables), firstFew(tables), len(problems), firstFew(problems), c.Logs())
	}
	t.Logf("%s: every table consistent and every node locates all %d objects %v later", what, len(objs), time.Since(start).Round(time.Millisecond))
}

// firstFew is problems for a failure message.
func firstFew(problems []string) string {
	return strings.Join(problems[:min(len(problems), 10)], "\n  ")
}

// TestTapestryCluster: 16 real `triad node --tapestry` processes on
// 127.0.0.1, 1,000 objects published from 4 of them and located from
// every node. The root of the most objects is killed with SIGKILL: its
// objects are found again within 30 s. A server is killed: its objects
// answer not-found within the pointer TTL, no route loops, the others'
// objects are still found. A node stopped with SIGTERM leaves gracefully:
// no locate fails.
func TestTapestryCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 16 processes; skipped in -short mode")
	}
	start := time.Now()
	d := e2e.StartDHash(t, tapNodes, "--tapestry", "--tapestry-republish", tapRepublish.String(), "--tapestry-beacon", "5s",
		"--maint-interval", "0", "--cc-scheme", "off")
	c := &tapCluster{DHash: d}
	testutil.WaitFor(t, 30*time.Second, "every node to join the Tapestry mesh", func() bool {
		for _, p := range d.Nodes {
			if tt, _ := c.table(p); !tt.Joined {
				return false
			}
		}
		return true
	})
	t.Logf("%d nodes up and joined in %v", tapNodes, time.Since(start).Round(time.Millisecond))
	// 16 nodes joined at once: no table keeps a hole a live node could
	// fill (issue 45: a hole made a node take itself for a key's root).
	if !testutil.Poll(30*time.Second, func() bool { return len(c.checkTables(d.Nodes)) == 0 }) {
		t.Fatalf("tables after the mass join:\n  %s", firstFew(c.checkTables(d.Nodes)))
	}

	c.publish(t)
	// Publishing returns once the server holds the object; its pointers
	// are on their way to the root.
	var problems []string
	if !testutil.Poll(20*time.Second, func() bool {
		problems = c.locateAll(d.Nodes[tapNodes-1:], c.objects, found)
		return len(problems) == 0
	}) {
		t.Fatalf("%d of %d objects not located 20 s after publishing:\n  %s\n%s", len(problems), tapObjects, firstFew(problems), d.Logs())
	}
	located := time.Now()
	if problems = c.locateAll(d.Nodes, c.objects, found); len(problems) > 0 {
		t.Fatalf("%d of %d locates failed:\n  %s", len(problems), tapNodes*tapObjects, firstFew(problems))
	}
	t.Logf("every node located every object: %d locates in %v", tapNodes*tapObjects, time.Since(located).Round(time.Millisecond))
	c.checkCommands(t)

	// The roots, by --all from one node.
	roots := map[string][]tapObject{}
	for _, o := range c.objects {
		l, err := c.locate(c.Client(d.Nodes[tapNodes-1]), o.Key, true)
		if err != nil || !l.Found {
			t.Fatalf("locate --all of %s: %v %+v", o.Key.Short(), err, l)
		}
		roots[l.Root.Addr] = append(roots[l.Root.Addr], o)
	}
	servers := map[string]bool{}
	for _, p := range d.Nodes[:tapServers] {
		servers[p.Addr] = true
	}
	var rootAddr string
	for addr, objs := range roots {
		if !servers[addr] && addr != d.Nodes[tapNodes-1].Addr && (rootAddr == "" || len(objs) > len(roots[rootAddr])) {
			rootAddr = addr
		}
	}
	_, root := d.ByAddr(rootAddr)
	rooted := roots[rootAddr]
	root.Crash(t)
	// Found again within 30 s from every live node: each node's table
	// drops the dead link and fills its entry from a live node with the
	// prefix (beacons every 5 s), and the pointers reach the new roots.
	c.waitTablesAndLocates(t, d.LiveNodes(), rooted, 30*time.Second, fmt.Sprintf("after SIGKILL of %s, the root of %d objects", root.Name, len(rooted)))

	// A server dies: its objects' pointers go, the others' stay.
	server := d.Nodes[1]
	var lost, kept []tapObject
	for _, o := range c.objects {
		if o.server == server.Addr {
			lost = append(lost, o)
		} else {
			kept = append(kept, o)
		}
	}
	server.Crash(t)
	killed := time.Now()
	live := d.LiveNodes()
	if !testutil.Poll(tapTTL, func() bool {
		problems = c.locateAll(live[len(live)-4:], lost, func(tapObject) bool { return false })
		return len(problems) == 0
	}) {
		t.Fatalf("the objects of the killed server %s still answer other than not-found %v after the SIGKILL (pointer TTL %v):\n  %s\n%s",
			server.Name, tapTTL, tapTTL, firstFew(problems), d.Logs())
	}
	t.Logf("killed server %s: its %d objects answer not-found %v after the SIGKILL (pointer TTL %v)",
		server.Name, len(lost), time.Since(killed).Round(time.Millisecond), tapTTL)
	if problems = c.locateAll(live, kept, found); len(problems) > 0 {
		t.Fatalf("after server %s died, %d locates of the other servers' objects failed:\n  %s", server.Name, len(problems), firstFew(problems))
	}

	// A graceful stop of a node that serves nothing: no locate fails,
	// while it leaves or after.
	var leaver *e2e.Node
	for _, p := range d.LiveNodes() {
		if servers[p.Addr] {
			continue
		}
		if leaver == nil || len(roots[p.Addr]) > len(roots[leaver.Addr]) {
			leaver = p
		}
	}
	var others []*e2e.Node
	for _, p := range d.LiveNodes() {
		if p != leaver {
			others = append(others, p)
		}
	}
	for _, p := range others[:4] {
		c.Client(p) // dialled here: the goroutine below must not fail t
	}
	stopped, during := make(chan struct{}), make(chan []string, 1)
	go func() { // locates go on until the leaver has exited
		var ps []string
		for {
			ps = append(ps, c.locateAll(others[:4], kept, found)...)
			select {
			case <-stopped:
				during <- ps
				return
			default:
			}
		}
	}()
	err := leaver.Stop(syscall.SIGTERM, 20*time.Second)
	close(stopped)
	if err != nil {
		t.Fatalf("graceful stop of %s: %v", leaver.Name, err)
	}
	problems = append(<-during, c.locateAll(others, kept, found)...)
	if len(problems) > 0 {
		t.Fatalf("%d locates failed around the graceful stop of %s (root of %d objects):\n  %s", len(problems), leaver.Name, len(roots[leaver.Addr]), firstFew(problems))
	}
	t.Logf("graceful stop of %s (root of %d objects): no locate failed while it left or after", leaver.Name, len(roots[leaver.Addr]))

	var loops, unreachable uint64
	for _, p := range d.LiveNodes() {
		_, counters := c.table(p)
		loops += counters["loops"]
		unreachable += counters["unreachable"]
	}
	if loops > 0 {
		t.Errorf("%d routes looped (dropped past the hop bound)", loops)
	}
	t.Logf("loops %d, routes dropped unreachable %d; whole test %v", loops, unreachable, time.Since(start).Round(time.Millisecond))
}

// publish publishes tapObjects objects from the first tapServers nodes.
func (c *tapCluster) publish(t *testing.T) {
	r := e2e.NewRand(t)
	c.objects = make([]tapObject, tapObjects)
	for i := range c.objects {
		c.objects[i].Data = e2e.RandomBytes(r, 200)
	}
	clients := make([]*client.Client, tapServers)
	for i := range clients {
		clients[i] = c.Client(c.Nodes[i])
	}
	began := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, tapWorkers)
	for w := range tapWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < tapObjects; i += tapWorkers {
				data := c.objects[i].Data
				ctx, cancel := context.WithTimeout(context.Background(), tapTimeout)
				m, err := clients[i%tapServers].Call(ctx, &wire.TapPublish{Data: data, App: tapestry.AppDOLR})
				cancel()
				if err != nil {
					errs <- fmt.Errorf("publish through %s: %w", c.Nodes[i%tapServers].Name, err)
					return
				}
				c.objects[i] = tapObject{Key: m.(*wire.TapPublishDone).Key, Data: data, server: c.Nodes[i%tapServers].Addr}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, o := range c.objects {
		if o.Key != id.Key(o.Data) {
			t.Fatalf("published %s for an object whose key is %s", o.Key, id.Key(o.Data))
		}
	}
	t.Logf("published %d objects from %d nodes in %v", tapObjects, tapServers, time.Since(began).Round(time.Millisecond))
}

// checkCommands runs the commands against the cluster: publish, locate
// (--json, --all), fetch, an unknown key, a bad key, tapestry status and
// table.
func (c *tapCluster) checkCommands(t *testing.T) {
	t.Helper()
	bin := e2e.Build(t)
	run := func(args ...string) (string, int) {
		out, err := exec.Command(bin, args...).CombinedOutput()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatalf("triad %v: %v", args, err)
		}
		return string(out), code
	}
	file := filepath.Join(c.Dir, "published.txt")
	content := []byte("an object kept where it was published\n")
	if err := os.WriteFile(file, content, 0o644); err != nil {
		t.Fatal(err)
	}
	server, from := c.Nodes[2], c.Nodes[7]
	out, code := run("publish", file, "--addr", server.Addr)
	key := strings.TrimSpace(out)
	if code != 0 || key != id.Key(content).String() {
		t.Fatalf("triad publish: exit %d, %q; want the key %s", code, out, id.Key(content))
	}
	var l struct { // triad locate --json
		Found   bool     `json:"found"`
		Servers []string `json:"servers"`
		Path    []string `json:"path"`
		Root    string   `json:"root"`
	}
	if !testutil.Poll(10*time.Second, func() bool {
		out, code = run("locate", key, "--json", "--addr", from.Addr)
		return code == 0 && json.Unmarshal([]byte(out), &l) == nil && l.Found
	}) {
		t.Fatalf("triad locate --json: exit %d, %s", code, out)
	}
	if len(l.Servers) != 1 || l.Servers[0] != server.Addr || len(l.Path) == 0 {
		t.Errorf("triad locate --json: %+v; want server %s and a path", l, server.Addr)
	}
	// Its root is the key's root, or none when a pointer on the way
	// answered: never the server in the root's place (issue 47).
	var all struct {
		Root string `json:"root"`
	}
	if out, code = run("locate", key, "--all", "--json", "--addr", from.Addr); code != 0 || json.Unmarshal([]byte(out), &all) != nil || all.Root == "" {
		t.Fatalf("triad locate --all --json: exit %d, %s", code, out)
	}
	if l.Root != "" && l.Root != all.Root {
		t.Errorf("triad locate --json names root %s; the key's root is %s", l.Root, all.Root)
	}
	if out, code = run("locate", key, "--all", "--addr", from.Addr); code != 0 || !strings.Contains(out, "root") || !strings.Contains(out, server.Addr) {
		t.Errorf("triad locate --all: exit %d\n%s", code, out)
	}
	fetched := filepath.Join(c.Dir, "fetched.txt")
	if out, code = run("fetch", key, "-o", fetched, "--addr", from.Addr); code != 0 {
		t.Fatalf("triad fetch: exit %d\n%s", code, out)
	}
	if got, err := os.ReadFile(fetched); err != nil || string(got) != string(content) {
		t.Errorf("triad fetch wrote %q (%v), want %q", got, err, content)
	}
	unknown := id.Key([]byte("published by nobody")).String()
	if out, code = run("locate", unknown, "--addr", from.Addr); code != 1 || !strings.Contains(out, "not found at root") {
		t.Errorf("triad locate of an unknown key: exit %d, %q; want 1 and not found at root", code, out)
	}
	if out, code = run("fetch", "abc", "--addr", from.Addr); code != 2 {
		t.Errorf("triad fetch abc: exit %d, want 2\n%s", code, out)
	}
	if out, code = run("unpublish", key, "--addr", server.Addr); code != 0 {
		t.Errorf("triad unpublish: exit %d\n%s", code, out)
	}
	if !testutil.Poll(10*time.Second, func() bool {
		out, code = run("locate", key, "--addr", from.Addr)
		return code == 1
	}) {
		t.Errorf("triad locate after unpublish: exit %d\n%s", code, out)
	}
	out, code = run("tapestry", "status", "--json", "--addr", server.Addr)
	var st struct {
		Joined   bool              `json:"joined"`
		Counters map[string]uint64 `json:"counters"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &st) != nil || !st.Joined || st.Counters["objects_published"] != tapObjects/tapServers {
		t.Errorf("triad tapestry status --json: exit %d, %+v; want joined and %d objects published\n%s", code, st, tapObjects/tapServers, out)
	}
	if out, code = run("tapestry", "table", "--addr", server.Addr); code != 0 || !strings.Contains(out, "backpointers (") {
		t.Errorf("triad tapestry table: exit %d\n%s", code, out)
	}
}

// TestMain removes the binary the tests built (e2e.Build).
func TestMain(m *testing.M) { os.Exit(e2e.Main(m)) }

// addrs is the addresses of refs, for messages.
func addrs(refs []wire.NodeRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.Addr
	}
	return out
}
