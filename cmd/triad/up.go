package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"triad/internal/id"
	"triad/internal/node"
)

const upAbout = `
Starts a small local triad ring on 127.0.0.1: --nodes node processes' worth of
state machines in this one process, each on its own port with its own data
folder under --data, joined into one ring. It prints what it started and how
to look at it, waits until the ring is consistent, and runs until Ctrl-C, when
every node leaves the ring gracefully. Started again with the same --data, the
nodes come back at the same ring positions.`

func runUp(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("up", "up [--nodes N] [--vnodes N] [--port P] [--data DIR]", upAbout, stderr)
	nodes := fs.Int("nodes", 4, "number of nodes")
	vnodes := fs.Int("vnodes", 2, "virtual servers per node")
	port := fs.Int("port", 4001, "first TCP port; node i listens on port+i")
	data := fs.String("data", "triad-data/up", "data `directory` for all nodes")
	nntpPort := fs.Int("nntp-port", 1119, "port of the news server on 127.0.0.1, articles kept in the ring (0: none)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	if *nodes < 1 || *nodes > 64 || *vnodes < 1 || *vnodes > 64 {
		return usageErr(fs, "want 1 to 64 nodes and 1 to 64 vnodes")
	}
	if *nntpPort < 0 || *nntpPort > 65535 {
		return usageErr(fs, "--nntp-port %d out of range", *nntpPort)
	}
	if *port < 1 || *port+*nodes > 65535 {
		return usageErr(fs, "--port %d out of range", *port)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var running []*runningNode
	for i := 0; i < *nodes; i++ {
		join := ""
		if i > 0 {
			join = running[0].addr
		}
		listen := fmt.Sprintf("127.0.0.1:%d", *port+i)
		dir := filepath.Join(*data, fmt.Sprintf("node%d", i))
		spec := defaultNodeSpec()
		spec.listen, spec.data, spec.join, spec.vnodes = listen, dir, join, *vnodes
		n, err := startNode(ctx, spec, log)
		if err != nil {
			stop()
			for _, r := range running {
				r.wait()
			}
			return fmt.Errorf("node %d: %w", i, err)
		}
		running = append(running, n)
		fmt.Fprintf(stdout, "started node %d on %s (%d vnodes, data in %s)\n", i, n.addr, *vnodes, dir)
	}
	var news *runningNNTP
	if *nntpPort > 0 {
		fs := flag.NewFlagSet("nntp", flag.ContinueOnError)
		o := addNNTPFlags(fs)
		listen, dir, nodeAddr := fmt.Sprintf("127.0.0.1:%d", *nntpPort), filepath.Join(*data, "nntp"), running[0].addr
		o.listen, o.data, o.node = &listen, &dir, &nodeAddr
		var err error
		if news, err = startNNTP(ctx, o, log); err != nil {
			stop()
			for _, r := range running {
				r.wait()
			}
			return fmt.Errorf("news server: %w", err)
		}
		fmt.Fprintf(stdout, "started the news server on %s (groups %s; articles kept in the ring)\n", news.addr, strings.Join(news.groups, ", "))
	}
	fmt.Fprintf(stdout, `
Look at it from another terminal:
  go run ./cmd/triad ring --addr %s
  go run ./cmd/triad lookup --addr %s --text hello
`, running[0].addr, running[len(running)-1].addr)
	if news != nil {
		fmt.Fprintf(stdout, `  point a newsreader at news://%s/ (no password from this machine), or:
  python3 -c "import nntplib; s = nntplib.NNTP('127.0.0.1', %d); print(s.group('local.test'))"
`, news.addr, *nntpPort)
	}
	fmt.Fprintf(stdout, `
Note: these %d nodes share this machine's disk. Each counts as a machine of its
own, so a block's replicas are on distinct nodes but not on distinct disks: a
local ring for trying triad, not for keeping data. On real machines, run one
'triad node' per machine (or give nodes that share a disk one --machine name).
`, len(running))
	fmt.Fprintln(stdout, "Press Ctrl-C to stop every node (each leaves the ring gracefully).")

	start := time.Now()
	for ctx.Err() == nil {
		if ringConsistent(ctx, running) {
			fmt.Fprintf(stdout, "ring consistent: %d vnodes, every successor pointer right (%.1fs)\n",
				*nodes**vnodes, time.Since(start).Seconds())
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(250 * time.Millisecond):
		}
	}
	<-ctx.Done()
	fmt.Fprintln(stdout, "stopping...")
	if news != nil {
		if err := news.close(); err != nil {
			fmt.Fprintf(stderr, "news server: %v\n", err)
		}
	}
	for _, n := range running {
		if err := n.wait(); err != nil {
			fmt.Fprintf(stderr, "node %s: %v\n", n.addr, err)
		}
	}
	fmt.Fprintln(stdout, "stopped")
	return nil
}

// ringConsistent reports whether every vnode's successor is the next vnode
// clockwise among all of them.
func ringConsistent(ctx context.Context, nodes []*runningNode) bool {
	type pos struct{ self, succ id.ID }
	var all []pos
	for _, n := range nodes {
		err := n.drv.Do(ctx, func(env node.Env) {
			for _, v := range n.node.Ring.Vnodes() {
				all = append(all, pos{v.Self().ID, v.Successor().ID})
			}
		})
		if err != nil {
			return false
		}
	}
	for _, p := range all {
		// No other vnode may sit strictly between a vnode and its successor.
		for _, q := range all {
			if q.self != p.self && q.self.Between(p.self, p.succ) {
				return false
			}
		}
		if len(all) > 1 && p.succ == p.self {
			return false
		}
	}
	return true
}
