package e2e

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
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/proc"
	"triad/internal/ring"
	"triad/internal/testutil"
	"triad/internal/wire"
)

// nodeJSON and vnodeJSON read `triad ring --json` (cmd/triad's inspect.go
// writes it).
type nodeJSON struct {
	ID   string `json:"id"`
	Addr string `json:"addr"`
}

type vnodeJSON struct {
	Self    nodeJSON          `json:"self"`
	Preds   []nodeJSON        `json:"predecessors"`
	Succs   []nodeJSON        `json:"successors"`
	Fingers []json.RawMessage `json:"fingers"`
}

// Vnodes is the vnodes per node that Cluster.Start runs.
const Vnodes = 2

// Node is one `triad node` process (internal/proc runs it): a restart
// with Cluster.Restart runs the same command line again; Cluster.Start on
// the same address and data directory makes a new Node.
type Node struct {
	*proc.Proc
	Name string
	Addr string
	Data string
	IDs  []string // vnode IDs, from the process's stdout
}

// Cluster is a set of node processes under test.
type Cluster struct {
	T      *testing.T
	Bin    string
	Dir    string
	TLSDir string  // the bundle c.triad talks to the nodes with, if they run TLS
	Procs  []*Node // every process started, including dead ones
	views  map[string]string
}

// NewCluster is an empty cluster whose processes t's cleanup kills.
func NewCluster(t *testing.T) *Cluster {
	c := &Cluster{T: t, Bin: Build(t), Dir: t.TempDir()}
	t.Cleanup(func() {
		for _, p := range c.Procs {
			p.Crash(t)
		}
	})
	return c
}

// FreePorts returns n distinct ports that were free a moment ago.
func FreePorts(t *testing.T, n int) []int {
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

// Start runs `triad node` with name, address and data directory, joining
// through join if it is not empty, and waits until it has printed its vnode
// IDs.
func (c *Cluster) Start(name, addr, data, join string) *Node {
	c.T.Helper()
	return c.StartWith(name, addr, data, join, Vnodes)
}

// StartWith is start with the vnode count and extra `triad node` flags
// chosen by the caller.
func (c *Cluster) StartWith(name, addr, data, join string, vnodes int, extra ...string) *Node {
	c.T.Helper()
	run := 1
	for _, p := range c.Procs {
		if p.Name == name {
			run++
		}
	}
	args := []string{"node", "--listen", addr, "--data", data, "--vnodes", fmt.Sprint(vnodes), "--stabilize", "500ms"}
	if join != "" {
		args = append(args, "--join", join)
	}
	args = append(args, extra...)
	p := &Node{Name: name, Addr: addr, Data: data,
		Proc: proc.New(proc.Config{Binary: c.Bin, Args: args, Log: filepath.Join(c.Dir, fmt.Sprintf("%s-run%d.log", name, run)), Name: name})}
	c.Procs = append(c.Procs, p) // newCluster's cleanup kills it
	c.waitIDs(p, vnodes)
	return p
}

// Restart starts p again with the same command line, so on the same data
// directory, and waits until it has printed its vnode IDs.
func (c *Cluster) Restart(p *Node) {
	c.T.Helper()
	c.waitIDs(p, len(p.IDs))
}

// waitIDs starts p and waits until it has printed its vnodes' IDs.
func (c *Cluster) waitIDs(p *Node, vnodes int) {
	c.T.Helper()
	if err := p.Start(); err != nil {
		c.T.Fatal(err)
	}
	_, err := p.WaitOutput("its vnode IDs", 15*time.Second, func(lines []string) bool {
		p.IDs = ParseIDs(lines)
		return len(p.IDs) == vnodes
	})
	if err != nil {
		c.T.Fatalf("%v\n%s", err, c.Logs())
	}
}

// ParseIDs reads the vnode IDs a node (or a site's node) prints after
// "listening on".
func ParseIDs(stdout []string) []string {
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

// Crash sends SIGKILL and waits for the process to exit.
func (p *Node) Crash(t *testing.T) {
	if err := p.Kill(); err != nil {
		t.Error(err)
	}
}

// Live is the processes started that are running.
func (c *Cluster) Live() []*Node { return running(c.Procs) }

// running is the nodes of ns whose process runs, in order.
func running(ns []*Node) []*Node {
	var out []*Node
	for _, p := range ns {
		if p.Running() {
			out = append(out, p)
		}
	}
	return out
}

// ringView is the JSON of `triad ring --json`.
type ringView struct {
	Vnodes []vnodeJSON `json:"vnodes"`
}

// Triad runs a triad command and returns its stdout.
func (c *Cluster) Triad(args ...string) ([]byte, error) {
	var stdout, stderr bytes.Buffer
	if c.TLSDir != "" && slices.Contains([]string{"ring", "lookup", "put", "get", "stat", "maint"}, args[0]) {
		args = append(args, "--tls", c.TLSDir)
	}
	cmd := exec.Command(c.Bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("triad %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}

// Check asks every live node for its ring view and lists what is wrong:
// ring.Check's problems (every vnode's whole successor list and its
// predecessor against the live vnodes), a vnode at another address than
// its process's or other than the ones it printed at start, and a list
// that names a dead process.
func (c *Cluster) Check() []string {
	live := c.Live()
	dead := map[string]bool{}
	for _, p := range c.Procs {
		if !p.Running() {
			dead[p.Addr] = true
		}
	}
	for _, p := range live {
		delete(dead, p.Addr) // restarted on the same address
	}

	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	c.views = map[string]string{}
	var views []wire.VnodeInfo
	for _, p := range live {
		out, err := c.Triad("ring", "--addr", p.Addr, "--json", "--timeout", "3s")
		if err != nil {
			bad("%s: %v", p.Name, err)
			c.views[p.Name] = err.Error()
			continue
		}
		c.views[p.Name] = string(out)
		var v ringView
		if err := json.Unmarshal(out, &v); err != nil {
			bad("%s: bad JSON: %v", p.Name, err)
			continue
		}
		var self []string
		for _, vn := range v.Vnodes {
			self = append(self, vn.Self.ID)
			if vn.Self.Addr != p.Addr {
				bad("%s: vnode %s has address %s", p.Name, short(vn.Self.ID), vn.Self.Addr)
			}
			info, err := vnodeInfo(vn)
			if err != nil {
				bad("%s: %v", p.Name, err)
				continue
			}
			views = append(views, info)
			for _, list := range [][]nodeJSON{vn.Succs, vn.Preds} {
				for _, n := range list {
					if dead[n.Addr] {
						bad("%s: vnode %s still lists %s at killed %s", p.Name, short(vn.Self.ID), short(n.ID), n.Addr)
					}
				}
			}
		}
		if !slices.Equal(self, p.IDs) {
			bad("%s: serves vnodes %v, printed %v", p.Name, self, p.IDs)
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

// WaitConsistent polls until check finds nothing wrong, failing with the
// ring views and node logs if that takes longer than within.
func (c *Cluster) WaitConsistent(what string, within time.Duration) {
	c.T.Helper()
	start := time.Now()
	var problems, history []string // history: how the problems changed, for the failure message
	last := ""
	if !testutil.Poll(within, func() bool {
		problems = c.Check()
		if now := strings.Join(problems, "\n    "); now != last {
			history = append(history, fmt.Sprintf("at %v: %d problem(s)\n    %s", time.Since(start).Round(time.Millisecond), len(problems), now))
			last = now
		}
		return len(problems) == 0
	}) {
		c.T.Fatalf("%s: ring not consistent after %v:\n  %s\n\nhistory:\n%s\n\nring views:\n%s\n%s",
			what, within, strings.Join(problems, "\n  "), strings.Join(history, "\n"), c.PrintViews(), c.Logs())
	}
	c.T.Logf("%s: ring of %d nodes consistent after %v", what, len(c.Live()), time.Since(start).Round(time.Millisecond))
}

// PrintViews formats the last ring views compactly: per vnode, its
// predecessor and successor lists (nearest first, short IDs) and how many
// fingers it knows.
func (c *Cluster) PrintViews() string {
	var b strings.Builder
	ids := func(list []nodeJSON) string {
		var s []string
		for _, n := range list {
			s = append(s, short(n.ID))
		}
		return strings.Join(s, " ")
	}
	for _, p := range c.Live() {
		fmt.Fprintf(&b, "%s %s:\n", p.Name, p.Addr)
		var v ringView
		if err := json.Unmarshal([]byte(c.views[p.Name]), &v); err != nil {
			fmt.Fprintf(&b, "  %s\n", strings.TrimSpace(c.views[p.Name]))
			continue
		}
		for _, vn := range v.Vnodes {
			fmt.Fprintf(&b, "  vnode %s  preds [%s]  succs [%s]  %d fingers\n",
				short(vn.Self.ID), ids(vn.Preds), ids(vn.Succs), len(vn.Fingers))
		}
	}
	return b.String()
}

// Logs returns every process's output, for failure messages.
func (c *Cluster) Logs() string {
	var b strings.Builder
	for _, p := range c.Procs {
		state := "running"
		if !p.Running() {
			state = fmt.Sprintf("exited: %v", p.Wait(0))
		}
		fmt.Fprintf(&b, "==== %s %s (%s), %s\n", p.Name, p.Addr, filepath.Base(p.Log()), state)
		out, err := os.ReadFile(p.Log())
		if err != nil {
			fmt.Fprintf(&b, "%v\n", err)
			continue
		}
		b.Write(out)
	}
	return b.String()
}

// CheckLookup looks "hello" up through the node at addr and checks the
// answer against the live vnode IDs.
func (c *Cluster) CheckLookup(addr string) {
	c.T.Helper()
	sum := sha256.Sum256([]byte("hello"))
	key := hex.EncodeToString(sum[:160/8])
	var all []string
	for _, p := range c.Live() {
		all = append(all, p.IDs...)
	}
	slices.Sort(all)
	i, _ := slices.BinarySearch(all, key) // the first ID >= key
	want := all[i%len(all)]

	out, err := c.Triad("lookup", "--addr", addr, "--json", "--text", "--timeout", "10s", "hello")
	if err != nil {
		c.T.Fatalf("lookup: %v\n%s", err, c.Logs())
	}
	var r struct {
		Key        string     `json:"key"`
		Hops       int        `json:"hops"`
		Successors []nodeJSON `json:"successors"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		c.T.Fatalf("lookup: bad JSON %q: %v", out, err)
	}
	if r.Key != key {
		c.T.Errorf("lookup: key %s, want %s", r.Key, key)
	}
	if len(r.Successors) == 0 || r.Successors[0].ID != want {
		c.T.Errorf("lookup of %s via %s: successors %v, want %s first\nring views:\n%s", key, addr, r.Successors, want, c.PrintViews())
	} else {
		c.T.Logf("lookup of %s via %s: successor %s, %d hop(s)", short(key), addr, short(want), r.Hops)
	}
}
