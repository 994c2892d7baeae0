package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	tnet "triad/internal/net"
	"triad/internal/ring"
)

const nodeAbout = `
Runs one triad node: a process with one or more virtual servers on the Chord
ring, serving peers and clients on --listen.

The first node of a ring is started without --join. Every other node joins
through any running node. A node keeps its ring IDs and the peers it last knew
in --data, so after a crash or reboot the same command (even without --join)
brings it back at the same ring positions, as a transient failure rather than a
new node. SIGINT or SIGTERM makes it leave the ring gracefully.

Example:
  triad node --listen 127.0.0.1:4001 --data /var/lib/triad
  triad node --listen 127.0.0.1:4002 --join 127.0.0.1:4001 --vnodes 4`

func runNode(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("node", "node --listen ADDR [--join ADDR] [--vnodes N] [--data DIR]", nodeAbout, stderr)
	listen := fs.String("listen", "127.0.0.1:4001", "TCP `address` to listen on (host:port)")
	join := fs.String("join", "", "`address` of any running node to join through (none: start a ring, or rejoin from saved peers)")
	vnodes := fs.Int("vnodes", 1, "virtual servers (ring positions) in this process")
	data := fs.String("data", "", "data `directory` (default ./triad-data/<port>)")
	stab := fs.Duration("stabilize", time.Second, "mean time between stabilization rounds")
	verbose := fs.Bool("v", false, "log connection-level detail")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	if *vnodes < 1 || *vnodes > 64 {
		return usageErr(fs, "--vnodes %d: want 1 to 64", *vnodes)
	}
	if *data == "" {
		_, port, _ := strings.Cut(*listen, ":")
		*data = filepath.Join("triad-data", port)
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	cfg := ring.DefaultConfig()
	cfg.StabilizeInterval = *stab
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	n, err := startNode(ctx, *listen, *data, *join, *vnodes, cfg, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "triad node: listening on %s, data in %s, %d vnode(s):\n", n.addr, *data, *vnodes)
	for _, x := range n.state.IDs {
		fmt.Fprintf(stdout, "  %s\n", x)
	}
	return n.wait()
}

// runningNode is a driver and host running in this process.
type runningNode struct {
	addr  string
	drv   *tnet.Driver
	host  *ring.Host
	state ring.State
	done  chan error
}

// startNode binds, loads or creates the node's state, and runs it until
// ctx ends.
func startNode(ctx context.Context, listen, data, join string, vnodes int, cfg ring.Config, log *slog.Logger) (*runningNode, error) {
	drv, err := tnet.Listen(tnet.Config{Listen: listen, DataDir: data, Log: log})
	if err != nil {
		return nil, err
	}
	st, err := ring.LoadState(drv.Disk(), drv.Rand(), vnodes)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", data, err)
	}
	h, err := ring.NewHost(cfg, drv.Addr(), st, join)
	if err != nil {
		return nil, err
	}
	n := &runningNode{addr: drv.Addr(), drv: drv, host: h, state: st, done: make(chan error, 1)}
	go func() { n.done <- drv.Run(ctx, h) }()
	return n, nil
}

func (n *runningNode) wait() error { return <-n.done }
