package main

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/proc"
	"triad/internal/ring"
	"triad/internal/testutil"
	"triad/internal/wire"
)

// The end-to-end tests run real `triad node` processes on 127.0.0.1, built
// once per test binary into binDir.
var (
	binDir    string
	buildOnce sync.Once
	triadBin  string
	buildErr  error
)

// TestMain removes the binary that buildTriad built, if any.
func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// buildTriad builds the triad binary once and returns its path.
func buildTriad(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "triad-e2e-")
		if buildErr != nil {
			return
		}
		triadBin = filepath.Join(binDir, "triad")
		out, err := exec.Command("go", "build", "-o", triadBin, ".").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return triadBin
}

const (
	clusterNodes  = 8
	clusterVnodes = 2
)

// nodeProc is one `triad node` process (internal/proc runs it): a restart
// with cluster.restart runs the same command line again; cluster.start on
// the same address and data directory makes a new nodeProc.
type nodeProc struct {
	*proc.Proc
	name string
	addr string
	data string
	ids  []string // vnode IDs, from the process's stdout
}

// cluster is a set of node processes under test.
type cluster struct {
	t      *testing.T
	bin    string
	dir    string
	tlsDir string      // the bundle c.triad talks to the nodes with, if they run TLS
	procs  []*nodeProc // every process started, including dead ones
	views  map[string]string
}

func newCluster(t *testing.T) *cluster {
	c := &cluster{t: t, bin: buildTriad(t), dir: t.TempDir()}
	t.Cleanup(func() {
		for _, p := range c.procs {
			p.kill(t)
		}
	})
	return c
}

// freePorts returns n distinct ports that were free a moment ago.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for len(ports) < n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return ports
}

// start runs `triad node` with name, address and data directory, joining
// through join if it is not empty, and waits until it has printed its vnode
// IDs.
func (c *cluster) start(name, addr, data, join string) *nodeProc {
	c.t.Helper()
	return c.startWith(name, addr, data, join, clusterVnodes)
}

// startWith is start with the vnode count and extra `triad node` flags
// chosen by the caller.
func (c *cluster) startWith(name, addr, data, join string, vnodes int, extra ...string) *nodeProc {
	c.t.Helper()
	run := 1
	for _, p := range c.procs {
		if p.name == name {
			run++
		}
	}
	args := []string{"node", "--listen", addr, "--data", data, "--vnodes", fmt.Sprint(vnodes), "--stabilize", "500ms"}
	if join != "" {
		args = append(args, "--join", join)
	}
	args = append(args, extra...)
	p := &nodeProc{name: name, addr: addr, data: data,
		Proc: proc.New(proc.Config{Binary: c.bin, Args: args, Log: filepath.Join(c.dir, fmt.Sprintf("%s-run%d.log", name, run)), Name: name})}
	c.procs = append(c.procs, p) // newCluster's cleanup kills it
	c.waitIDs(p, vnodes)
	return p
}

// restart starts p again with the same command line, so on the same data
// directory, and waits until it has printed its vnode IDs.
func (c *cluster) restart(p *nodeProc) {
	c.t.Helper()
	c.waitIDs(p, len(p.ids))
}

// waitIDs starts p and waits until it has printed its vnodes' IDs.
func (c *cluster) waitIDs(p *nodeProc, vnodes int) {
	c.t.Helper()
	if err := p.Start(); err != nil {
		c.t.Fatal(err)
	}
	_, err := p.WaitOutput("its vnode IDs", 15*time.Second, func(lines []string) bool {
		p.ids = parseIDs(lines)
		return len(p.ids) == vnodes
	})
	if err != nil {
		c.t.Fatalf("%v\n%s", err, c.logs())
	}
}

// parseIDs reads the vnode IDs a node (or a site's node) prints after
// "listening on".
func parseIDs(stdout []string) []string {
	var ids []string
	started := false
	for _, line := range stdout {
		if strings.HasPrefix(line, "triad node: listening on") || strings.HasPrefix(line, "triad site: node listening on") {
			started = true
			continue
		}
		if started && strings.HasPrefix(line, "  ") && strings.TrimSpace(line) != "" {
			ids = append(ids, strings.TrimSpace(line))
		}
	}
	return ids
}

// kill sends SIGKILL and waits for the process to exit.
func (p *nodeProc) kill(t *testing.T) {
	if err := p.Kill(); err != nil {
		t.Error(err)
	}
}

func (p *nodeProc) alive() bool { return p.Running() }

func (c *cluster) live() []*nodeProc {
	var out []*nodeProc
	for _, p := range c.procs {
		if p.alive() {
			out = append(out, p)
		}
	}
	return out
}

// ringView is the JSON of `triad ring --json`.
type ringView struct {
	Vnodes []vnodeJSON `json:"vnodes"`
}

// triad runs a triad command and returns its stdout.
func (c *cluster) triad(args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	if c.tlsDir != "" && slices.Contains([]string{"ring", "lookup", "put", "get", "stat", "maint"}, args[0]) {
		args = append(args, "--tls", c.tlsDir)
	}
	cmd := exec.Command(c.bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("triad %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// check asks every live node for its ring view and lists what is wrong:
// ring.Check's problems (every vnode's whole successor list and its
// predecessor against the live vnodes), a vnode at another address than
// its process's or other than the ones it printed at start, and a list
// that names a dead process.
func (c *cluster) check() []string {
	live := c.live()
	dead := map[string]bool{}
	for _, p := range c.procs {
		if !p.alive() {
			dead[p.addr] = true
		}
	}
	for _, p := range live {
		delete(dead, p.addr) // restarted on the same address
	}

	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	c.views = map[string]string{}
	var views []wire.VnodeInfo
	for _, p := range live {
		out, err := c.triad("ring", "--addr", p.addr, "--json", "--timeout", "3s")
		if err != nil {
			bad("%s: %v", p.name, err)
			c.views[p.name] = err.Error()
			continue
		}
		c.views[p.name] = string(out)
		var v ringView
		if err := json.Unmarshal(out, &v); err != nil {
			bad("%s: bad JSON: %v", p.name, err)
			continue
		}
		var self []string
		for _, vn := range v.Vnodes {
			self = append(self, vn.Self.ID)
			if vn.Self.Addr != p.addr {
				bad("%s: vnode %s has address %s", p.name, short(vn.Self.ID), vn.Self.Addr)
			}
			info, err := vnodeInfo(vn)
			if err != nil {
				bad("%s: %v", p.name, err)
				continue
			}
			views = append(views, info)
			for _, list := range [][]nodeJSON{vn.Succs, vn.Preds} {
				for _, n := range list {
					if dead[n.Addr] {
						bad("%s: vnode %s still lists %s at killed %s", p.name, short(vn.Self.ID), short(n.ID), n.Addr)
					}
				}
			}
		}
		if !slices.Equal(self, p.ids) {
			bad("%s: serves vnodes %v, printed %v", p.name, self, p.ids)
		}
	}
	// The whole successor list, not only its head: puts place their
	// copies from it (a list with a gap placed a copy on one host only,
	// once, in CI).
	for _, p := range ring.Check(views, ring.Want{Succs: ring.DefaultConfig().Succs, Preds: 1}) {
		bad("%s", p)
	}
	return problems
}

// vnodeInfo is vn, a vnode of `triad ring --json`, as ring.Check takes it.
func vnodeInfo(vn vnodeJSON) (wire.VnodeInfo, error) {
	var err error
	ref := func(n nodeJSON) wire.NodeRef {
		x, e := id.Parse(n.ID, id.Bytes)
		err = cmp.Or(err, e)
		return wire.NodeRef{ID: x, Addr: n.Addr}
	}
	info := wire.VnodeInfo{Self: ref(vn.Self)}
	for _, n := range vn.Succs {
		info.Succs = append(info.Succs, ref(n))
	}
	for _, n := range vn.Preds {
		info.Preds = append(info.Preds, ref(n))
	}
	return info, err
}

func short(x string) string { return x[:min(len(x), 8)] }

// waitConsistent polls until check finds nothing wrong, failing with the
// ring views and node logs if that takes longer than within.
func (c *cluster) waitConsistent(what string, within time.Duration) {
	c.t.Helper()
	start := time.Now()
	var problems, history []string // history: how the problems changed, for the failure message
	last := ""
	if !testutil.Poll(within, func() bool {
		problems = c.check()
		if now := strings.Join(problems, "\n    "); now != last {
			history = append(history, fmt.Sprintf("at %v: %d problem(s)\n    %s", time.Since(start).Round(time.Millisecond), len(problems), now))
			last = now
		}
		return len(problems) == 0
	}) {
		c.t.Fatalf("%s: ring not consistent after %v:\n  %s\n\nhistory:\n%s\n\nring views:\n%s\n%s",
			what, within, strings.Join(problems, "\n  "), strings.Join(history, "\n"), c.printViews(), c.logs())
	}
	c.t.Logf("%s: ring of %d nodes consistent after %v", what, len(c.live()), time.Since(start).Round(time.Millisecond))
}

// printViews formats the last ring views compactly: per vnode, its
// predecessor and successor lists (nearest first, short IDs) and how many
// fingers it knows.
func (c *cluster) printViews() string {
	var b strings.Builder
	ids := func(list []nodeJSON) string {
		var s []string
		for _, n := range list {
			s = append(s, short(n.ID))
		}
		return strings.Join(s, " ")
	}
	for _, p := range c.live() {
		fmt.Fprintf(&b, "%s %s:\n", p.name, p.addr)
		var v ringView
		if err := json.Unmarshal([]byte(c.views[p.name]), &v); err != nil {
			fmt.Fprintf(&b, "  %s\n", strings.TrimSpace(c.views[p.name]))
			continue
		}
		for _, vn := range v.Vnodes {
			fmt.Fprintf(&b, "  vnode %s  preds [%s]  succs [%s]  %d fingers\n",
				short(vn.Self.ID), ids(vn.Preds), ids(vn.Succs), len(vn.Fingers))
		}
	}
	return b.String()
}

// logs returns every process's output, for failure messages.
func (c *cluster) logs() string {
	var b strings.Builder
	for _, p := range c.procs {
		state := "running"
		if !p.alive() {
			state = fmt.Sprintf("exited: %v", p.Wait(0))
		}
		fmt.Fprintf(&b, "==== %s %s (%s), %s\n", p.name, p.addr, filepath.Base(p.Log()), state)
		out, err := os.ReadFile(p.Log())
		if err != nil {
			fmt.Fprintf(&b, "%v\n", err)
			continue
		}
		b.Write(out)
	}
	return b.String()
}

// checkLookup looks "hello" up through the node at addr and checks the
// answer against the live vnode IDs.
func (c *cluster) checkLookup(addr string) {
	c.t.Helper()
	sum := sha256.Sum256([]byte("hello"))
	key := hex.EncodeToString(sum[:160/8])
	var all []string
	for _, p := range c.live() {
		all = append(all, p.ids...)
	}
	slices.Sort(all)
	i, _ := slices.BinarySearch(all, key) // the first ID >= key
	want := all[i%len(all)]

	out, err := c.triad("lookup", "--addr", addr, "--json", "--text", "--timeout", "10s", "hello")
	if err != nil {
		c.t.Fatalf("lookup: %v\n%s", err, c.logs())
	}
	var r struct {
		Key        string     `json:"key"`
		Hops       int        `json:"hops"`
		Successors []nodeJSON `json:"successors"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		c.t.Fatalf("lookup: bad JSON %q: %v", out, err)
	}
	if r.Key != key {
		c.t.Errorf("lookup: key %s, want %s", r.Key, key)
	}
	if len(r.Successors) == 0 || r.Successors[0].ID != want {
		c.t.Errorf("lookup of %s via %s: successors %v, want %s first\nring views:\n%s", key, addr, r.Successors, want, c.printViews())
	} else {
		c.t.Logf("lookup of %s via %s: successor %s, %d hop(s)", short(key), addr, short(want), r.Hops)
	}
}

// TestClusterKillRestart runs 8 node processes, SIGKILLs 2, restarts one
// of them from its data directory alone, and checks that the ring heals
// each time and that lookups find the right node.
func TestClusterKillRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 8 processes; skipped in -short mode")
	}
	c := newCluster(t)
	ports := freePorts(t, clusterNodes)
	addr := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[i]) }
	data := func(i int) string { return filepath.Join(c.dir, fmt.Sprintf("data%d", i)) }
	name := func(i int) string { return fmt.Sprintf("node%d", i) }

	start := time.Now()
	nodes := []*nodeProc{c.start(name(0), addr(0), data(0), "")}
	for i := 1; i < clusterNodes; i++ {
		nodes = append(nodes, c.start(name(i), addr(i), data(i), addr(0)))
	}
	c.waitConsistent("after start", 30*time.Second)
	c.checkLookup(addr(clusterNodes - 1))

	// Two crashes, neither of them the node the others joined through.
	victims := []int{3, 6}
	for _, i := range victims {
		nodes[i].kill(t)
	}
	c.waitConsistent("after killing "+name(victims[0])+" and "+name(victims[1]), 30*time.Second)

	// The first victim comes back from its data directory alone, at the
	// same ring positions.
	back := victims[0]
	oldIDs := nodes[back].ids
	nodes[back] = c.start(name(back), addr(back), data(back), "")
	if !slices.Equal(nodes[back].ids, oldIDs) {
		t.Fatalf("%s restarted with vnode IDs %v, want %v", name(back), nodes[back].ids, oldIDs)
	}
	c.waitConsistent("after restarting "+name(back), 30*time.Second)
	c.checkLookup(addr(1))
	c.checkLookup(addr(back))
	t.Logf("whole test took %v", time.Since(start).Round(time.Millisecond))
}
