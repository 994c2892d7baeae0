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

var nodeAbout = help("node")

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
