package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"triad/internal/client"
	"triad/internal/id"
	"triad/internal/proc"
)

// ChaosConfig is one run of the chaos loop: real `triad node` processes on
// 127.0.0.1, a writer that logs every acknowledged put, and a killer that
// SIGKILLs a random node and restarts it, over and over; at the end every
// acknowledged block must read back.
type ChaosConfig struct {
	Binary   string
	Dir      string // parent of the nodes' data folders; must exist
	Nodes    int
	Duration time.Duration // of the writing and killing
	Seed     uint64
	// NodeArgs are extra `triad node` flags (the run adds
	// --maint-interval 30s unless they set one).
	NodeArgs []string
	// AckAndDrop, for tests, runs the last AckAndDrop nodes with storage
	// that lies (`triad node --test-lie lying-tree`: it acknowledges
	// every put and keeps only the keys, which its Merkle tree lists), and
	// wipes their data folders before every restart. Their copies are
	// none: the run must lose nothing all the same (issue 27).
	AckAndDrop int
	// Port is node i's port, Port+i (0: free ports).
	Port int
	Log  func(format string, args ...any)
}

// ChaosResult is what a run did and found.
type ChaosResult struct {
	Nodes           int     `json:"nodes"`
	Seconds         float64 `json:"seconds"`
	Kills           int     `json:"kills"`
	Restarts        int     `json:"restarts"`
	Acked           int     `json:"acknowledged_puts"`
	PutsFailed      int     `json:"puts_failed"` // not acknowledged: the writer moves on
	Read            int     `json:"read_back"`
	Lost            int     `json:"lost"` // acknowledged and not readable at the end
	RecoverySeconds float64 `json:"recovery_seconds"`
	FirstLost       string  `json:"first_lost,omitempty"`
}

// chaosNode is one node of the loop, its process restarted on the same
// command line after every kill.
type chaosNode struct {
	addr, data string
	p          *proc.Proc
	up         bool // guarded by chaosRun.mu while the writers run
	wipe       bool // its data folder is removed before every start
}

// Chaos runs the loop and stops the nodes.
func Chaos(cfg ChaosConfig) (res ChaosResult, err error) {
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	if cfg.Nodes < 3 || cfg.Duration <= 0 {
		return res, errors.New("bench: chaos wants at least 3 nodes and a positive duration")
	}
	if cfg.AckAndDrop < 0 || cfg.AckAndDrop > (cfg.Nodes-1)/3 {
		return res, fmt.Errorf("bench: chaos takes 0 to %d ack-and-drop nodes of %d (no replica set of two may hold two)", (cfg.Nodes-1)/3, cfg.Nodes)
	}
	res.Nodes = cfg.Nodes
	dir, err := os.MkdirTemp(cfg.Dir, "triad-chaos-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	run := &chaosRun{cfg: cfg, res: res, stop: make(chan struct{})}
	defer run.stopNodes()
	if err := run.startNodes(dir); err != nil {
		return run.res, err
	}
	cfg.Log("chaos: %d nodes up; writing and killing for %s", cfg.Nodes, cfg.Duration)
	if err := run.writeAndKill(); err != nil {
		return run.res, err
	}
	run.readBackAll()
	return run.res, nil
}

// chaosRun is one run of Chaos. Its steps run in this order: startNodes
// (and wait for the ring), writeAndKill (the writers and the killer),
// readBackAll; stopNodes ends it.
type chaosRun struct {
	cfg   ChaosConfig
	res   ChaosResult
	nodes []*chaosNode

	mu     sync.Mutex // guards nodes' up state and acked
	acked  []id.ID    // the keys of acknowledged puts
	failed atomic.Int64
	stop   chan struct{} // closed to stop the writers
	wg     sync.WaitGroup
}

// startNodes starts every node on a port of its own, all joining the
// first, and waits until the ring is consistent.
func (run *chaosRun) startNodes(dir string) error {
	cfg := run.cfg
	for i := range cfg.Nodes {
		addr, err := nodeAddr(cfg.Port, i)
		if err != nil {
			return err
		}
		n := &chaosNode{addr: addr, data: filepath.Join(dir, fmt.Sprintf("node%d", i))}
		args := []string{"node", "--listen", addr, "--data", n.data, "--maint-interval", "30s"}
		if i > 0 {
			args = append(args, "--join", run.nodes[0].addr)
		}
		args = append(args, cfg.NodeArgs...)
		if i >= cfg.Nodes-cfg.AckAndDrop {
			args = append(args, "--test-lie", "lying-tree")
			n.wipe = true
		}
		n.p = proc.New(proc.Config{Binary: cfg.Binary, Args: args, Log: filepath.Join(dir, fmt.Sprintf("node%d.log", i)), Name: "node " + addr})
		run.nodes = append(run.nodes, n)
	}
	for _, n := range run.nodes {
		if err := run.start(n); err != nil {
			return err
		}
	}
	ring := &cluster{}
	for _, n := range run.nodes {
		ring.addrs = append(ring.addrs, n.addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return ring.waitRing(ctx)
}

// start starts n (again), wiping a liar's data folder first, and waits
// until it listens.
func (run *chaosRun) start(n *chaosNode) error {
	if n.wipe {
		if err := os.RemoveAll(n.data); err != nil {
			return err
		}
	}
	if err := n.p.Start(); err != nil {
		return err
	}
	run.mu.Lock()
	n.up = true
	run.mu.Unlock()
	return n.p.WaitPort(n.addr, 10*time.Second)
}

// stopNodes asks the nodes still up to leave, and logs what goes wrong.
func (run *chaosRun) stopNodes() {
	for _, n := range run.nodes {
		if n.up {
			if err := n.p.Stop(syscall.SIGTERM, stopWait); err != nil {
				run.cfg.Log("chaos: stopping %s: %v", n.addr, err)
			}
		}
	}
}

// writeAndKill runs four writers for cfg.Duration while the killer takes
// one node down at a time: SIGKILL, and back after 2-6 s.
func (run *chaosRun) writeAndKill() error {
	cfg := run.cfg
	r := rand.New(rand.NewPCG(cfg.Seed, 0xc4a05))
	t0 := time.Now()
	for w := range 4 {
		run.wg.Add(1)
		go run.write(rand.New(rand.NewPCG(cfg.Seed, uint64(w))))
	}
	defer func() {
		run.res.Seconds = time.Since(t0).Seconds()
		run.res.Acked, run.res.PutsFailed = len(run.acked), int(run.failed.Load())
	}()
	for time.Since(t0) < cfg.Duration {
		time.Sleep(time.Duration(2000+r.IntN(4000)) * time.Millisecond)
		n := run.nodes[r.IntN(len(run.nodes))]
		if err := n.p.Kill(); err != nil {
			run.stopWriters()
			return err
		}
		run.mu.Lock()
		n.up = false
		run.mu.Unlock()
		run.res.Kills++
		time.Sleep(time.Duration(2000+r.IntN(4000)) * time.Millisecond)
		if err := run.start(n); err != nil {
			run.stopWriters()
			return fmt.Errorf("restarting %s: %w", n.addr, err)
		}
		run.res.Restarts++
		run.mu.Lock()
		so := len(run.acked)
		run.mu.Unlock()
		cfg.Log("chaos: %s killed and back; %d puts acknowledged so far", n.addr, so)
	}
	run.stopWriters()
	return nil
}

func (run *chaosRun) stopWriters() {
	close(run.stop)
	run.wg.Wait()
}

// upAddrs lists the addresses of the nodes up.
func (run *chaosRun) upAddrs() []string {
	run.mu.Lock()
	defer run.mu.Unlock()
	var out []string
	for _, n := range run.nodes {
		if n.up {
			out = append(out, n.addr)
		}
	}
	return out
}

// write puts random blocks (100 B to 3 KB, for a day) through random nodes
// up, noting each acknowledged key, until the run stops it.
func (run *chaosRun) write(wr *rand.Rand) {
	defer run.wg.Done()
	clients := clientCache{}
	defer clients.close()
	for {
		select {
		case <-run.stop:
			return
		default:
		}
		addrs := run.upAddrs()
		addr := addrs[wr.IntN(len(addrs))]
		c, derr := clients.get(addr)
		if derr != nil {
			run.failed.Add(1)
			continue
		}
		data := make([]byte, 100+wr.IntN(3000))
		for i := range data {
			data[i] = byte(wr.Uint32())
		}
		pctx, pcancel := context.WithTimeout(context.Background(), 10*time.Second)
		key, _, err := c.Put(pctx, data, client.PutOptions{Expire: 24 * time.Hour})
		pcancel()
		if err != nil {
			run.failed.Add(1)
			clients.drop(addr)
			continue
		}
		run.mu.Lock()
		run.acked = append(run.acked, key)
		run.mu.Unlock()
	}
}

// readBackAll reads back every acknowledged block, every node being up,
// through any node (the client checks each block against its key), by
// readBackWorkers at once. Gets that fail are retried while the ring
// settles, for at most a minute.
func (run *chaosRun) readBackAll() {
	res := &run.res
	run.cfg.Log("chaos: reading back %d acknowledged blocks", len(run.acked))
	t1 := time.Now()
	pending := run.acked
	for round := 0; len(pending) > 0; round++ {
		again := readBack(run.nodes, pending, round)
		res.Read += len(pending) - len(again)
		pending = again
		if len(pending) == 0 || time.Since(t1) > time.Minute {
			break
		}
		time.Sleep(2 * time.Second)
	}
	res.Lost = len(pending)
	if res.Lost > 0 {
		res.FirstLost = pending[0].String()
	}
	res.RecoverySeconds = time.Since(t1).Seconds()
}

// readBackWorkers is how many gets the read-back has in flight.
const readBackWorkers = 8

// readBack gets every key, spread over the nodes (shifted by round, so a
// retry goes through another node), and returns the keys that failed.
func readBack(nodes []*chaosNode, keys []id.ID, round int) []id.ID {
	failed := make([][]id.ID, readBackWorkers)
	var wg sync.WaitGroup
	for w := range readBackWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl := clientCache{}
			defer cl.close()
			for i := w; i < len(keys); i += readBackWorkers {
				c, err := cl.get(nodes[(i+round)%len(nodes)].addr)
				if err == nil {
					gctx, gcancel := context.WithTimeout(context.Background(), 5*time.Second)
					_, _, err = c.Get(gctx, keys[i])
					gcancel()
				}
				if err != nil {
					failed[w] = append(failed[w], keys[i])
				}
			}
		}()
	}
	wg.Wait()
	return slices.Concat(failed...)
}

// clientCache keeps one client per node address, dialled on first use.
// One goroutine uses a cache.
type clientCache map[string]*client.Client

func (cc clientCache) get(addr string) (*client.Client, error) {
	if c := cc[addr]; c != nil {
		return c, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, addr)
	if err != nil {
		return nil, err
	}
	cc[addr] = c
	return c, nil
}

// drop closes and forgets the client of addr (its node went away).
func (cc clientCache) drop(addr string) {
	if c := cc[addr]; c != nil {
		c.Close()
		delete(cc, addr)
	}
}

func (cc clientCache) close() {
	for _, c := range cc {
		c.Close()
	}
}
