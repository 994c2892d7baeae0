package bench

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"triad/internal/client"
	"triad/internal/id"
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
	Log        func(format string, args ...any)
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

type chaosNode struct {
	addr, data, log string
	args            []string
	cmd             *exec.Cmd
	up              bool
	wipe            bool // its data folder is removed before every start
}

// Chaos runs the loop and stops the nodes.
func Chaos(cfg ChaosConfig) (res ChaosResult, err error) {
	logf := cfg.Log
	if logf == nil {
		logf = func(string, ...any) {}
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
	r := rand.New(rand.NewPCG(cfg.Seed, 0xc4a05))
	nodes := make([]*chaosNode, cfg.Nodes)
	for i := range nodes {
		addr, err := freeLoopbackAddr()
		if err != nil {
			return res, err
		}
		n := &chaosNode{addr: addr, data: filepath.Join(dir, fmt.Sprintf("node%d", i)), log: filepath.Join(dir, fmt.Sprintf("node%d.log", i))}
		n.args = []string{"node", "--listen", addr, "--data", n.data, "--maint-interval", "30s"}
		if i > 0 {
			n.args = append(n.args, "--join", nodes[0].addr)
		}
		n.args = append(n.args, cfg.NodeArgs...)
		if i >= cfg.Nodes-cfg.AckAndDrop {
			n.args = append(n.args, "--test-lie", "lying-tree")
			n.wipe = true
		}
		nodes[i] = n
	}
	start := func(n *chaosNode) error {
		if n.wipe {
			if err := os.RemoveAll(n.data); err != nil {
				return err
			}
		}
		f, err := os.OpenFile(n.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return err
		}
		defer f.Close()
		n.cmd = command(cfg.Binary, n.args...)
		n.cmd.Stdout, n.cmd.Stderr = f, f
		if err := n.cmd.Start(); err != nil {
			return err
		}
		n.up = true
		return waitListening(n.addr, 10*time.Second)
	}
	defer func() {
		for _, n := range nodes {
			if n.up {
				n.cmd.Process.Signal(syscall.SIGTERM)
				n.cmd.Wait()
			}
		}
	}()
	for _, n := range nodes {
		if err := start(n); err != nil {
			return res, err
		}
	}
	ring := &cluster{}
	for _, n := range nodes {
		ring.addrs = append(ring.addrs, n.addr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := ring.waitRing(ctx); err != nil {
		return res, err
	}
	logf("chaos: %d nodes up; writing and killing for %s", cfg.Nodes, cfg.Duration)

	var (
		mu     sync.Mutex // guards nodes' up state and acked
		acked  []id.ID
		failed atomic.Int64
	)
	upAddrs := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var out []string
		for _, n := range nodes {
			if n.up {
				out = append(out, n.addr)
			}
		}
		return out
	}
	t0 := time.Now()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			wr := rand.New(rand.NewPCG(cfg.Seed, uint64(w)))
			clients := clientCache{}
			defer clients.close()
			for {
				select {
				case <-stop:
					return
				default:
				}
				addrs := upAddrs()
				addr := addrs[wr.IntN(len(addrs))]
				c, derr := clients.get(addr)
				if derr != nil {
					failed.Add(1)
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
					failed.Add(1)
					clients.drop(addr)
					continue
				}
				mu.Lock()
				acked = append(acked, key)
				mu.Unlock()
			}
		}()
	}
	// The killer: one node down at a time, SIGKILL, back after 2-6 s.
	for time.Since(t0) < cfg.Duration {
		time.Sleep(time.Duration(2000+r.IntN(4000)) * time.Millisecond)
		n := nodes[r.IntN(len(nodes))]
		n.cmd.Process.Kill()
		n.cmd.Wait()
		mu.Lock()
		n.up = false
		mu.Unlock()
		res.Kills++
		time.Sleep(time.Duration(2000+r.IntN(4000)) * time.Millisecond)
		if err := start(n); err != nil {
			close(stop)
			wg.Wait()
			return res, fmt.Errorf("restarting %s: %w", n.addr, err)
		}
		res.Restarts++
		mu.Lock()
		so := len(acked)
		mu.Unlock()
		logf("chaos: %s killed and back; %d puts acknowledged so far", n.addr, so)
	}
	close(stop)
	wg.Wait()
	res.Seconds = time.Since(t0).Seconds()
	res.Acked, res.PutsFailed = len(acked), int(failed.Load())

	// Every node is up: every acknowledged block must read back, through
	// any node (the client checks each block against its key), by
	// readBackWorkers at once. Gets that fail are retried while the ring
	// settles, for at most a minute.
	logf("chaos: reading back %d acknowledged blocks", len(acked))
	t1 := time.Now()
	pending := acked
	for round := 0; len(pending) > 0; round++ {
		again := readBack(nodes, pending, round)
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
	return res, nil
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
