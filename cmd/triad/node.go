package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"triad/internal/noded"
)

const nodeAbout = `
Runs one triad node: a process with one or more virtual servers on the Chord
ring, serving peers and clients on --listen.

The first node of a ring is started without --join. Every other node joins
through any running node. A node keeps its ring IDs and the peers it last knew
in --data, so after a crash or reboot the same command (even without --join)
brings it back at the same ring positions, as a transient failure rather than a
new node. SIGINT or SIGTERM makes it leave the ring gracefully.

A node's ring IDs derive from its listen address (vnode i sits at a hash of
the address and i), and it refuses peers whose IDs do not. A new node takes
--vnodes of the first --positions such positions (default: all it may use),
those that even out the nodes' shares of the ring it joins, and keeps them. With --tls every
connection is mutual TLS and a certificate grants only what it names: a
node's certificate its address, machine and vnode count (--vnodes must not
exceed it; --machine is the certificate's), a client's, a news front-end's
or an operator's the client API, and only an operator's the operators'
commands (maint pause). Without --tls the node trusts its network: any
process that can reach the port and proves the address it listens on can
join the ring, and maint pause is taken from this machine only.

Example:
  triad node --listen 127.0.0.1:4001 --data /var/lib/triad
  triad node --listen 127.0.0.1:4002 --join 127.0.0.1:4001 --vnodes 4`

// nodeLimitMB is a node's default soft memory limit. Its driver bounds
// the bytes of frames in flight and of replies queued (64 MiB each), but
// the collector, relaxed to let the heap grow to five times the live data
// (relaxGC), lets the garbage of clients that stall frames or never read
// their replies grow a node whose live heap stays near 60 MB to 300-450
// MB and more (issue 44, triad bench pin); past this limit it collects as
// often as it must. 256 held those attacks to about 270 MB, but slowed
// D2-FS's copy of Go's src through 8 nodes from 18 to 26 s (the nodes'
// heaps pass 256 MB under that load); 512 showed no cost of its own.
const nodeLimitMB = 512

func runNode(args []string, stdout, stderr io.Writer) error {
	o := noded.DefaultOptions()
	fs := newFlags("node", "node --listen ADDR [--join ADDR] [--vnodes N] [--data DIR] [block-store flags]", nodeAbout, stderr)
	o.RegisterFlags(fs)
	verbose := fs.Bool("v", false, "log connection-level detail")
	profile := addProfileFlag(fs, "the node until it stops")
	memoryMB := fs.Int("memory-limit-mb", nodeLimitMB, "soft limit of the node's Go memory (heap and stacks) in MiB, past which it collects garbage as often as it must; raise it for large tables (a full Tapestry pointer table holds about 220 MB); 0: none; GOMEMLIMIT overrides")
	if _, err := parseCommand(fs, args, "node", &o); err != nil {
		return err
	}
	if *memoryMB < 0 {
		return usageErr(fs, "--memory-limit-mb %d: want 0 (none) or a positive size", *memoryMB)
	}
	stopProfile, err := profile.startDaemon(*memoryMB)
	if err != nil {
		return err
	}
	defer stopProfile()
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	n, err := noded.Start(ctx, o, log)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "triad node: listening on %s, data in %s, %d vnode(s):\n", n.Addr, n.Data, o.Vnodes)
	for _, x := range n.Host.State.IDs {
		fmt.Fprintf(stdout, "  %s\n", x)
	}
	if n.HTTP != nil {
		fmt.Fprintf(stdout, "status page on http://%s/, metrics on http://%s/metrics\n", n.HTTP.Addr, n.HTTP.Addr)
	}
	report := func(s string) { fmt.Fprintf(stderr, "triad node: %s\n", s) }
	if err := n.WaitJoined(ctx, o.Join, o.JoinTimeout, report); err != nil {
		return errors.Join(err, n.Close())
	}
	return n.Wait()
}
