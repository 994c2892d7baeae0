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

	"triad/internal/localdeploy"
	"triad/internal/newsd"
)

var upAbout = help("up")

func runUp(args []string, stdout, stderr io.Writer) error {
	o := localdeploy.DefaultOptions()
	fs := newFlags("up", "up [--sites N] [--nodes N] [--vnodes N] [--port P] [--nntp-port P] [--data DIR]", upAbout, stderr)
	o.RegisterFlags(fs)
	profile := addProfileFlag(fs, "every node and site until Ctrl-C")
	memoryMB := fs.Int("memory-limit-mb", -1, "soft limit of the whole deployment's Go memory (its nodes and sites share one process) in MiB, past which it collects garbage as often as it must; -1: 512 for each node and 256 for each site, as each would have alone; 0: none; GOMEMLIMIT overrides")
	cf, err := parseCommand(fs, args, "up", &o)
	if err != nil {
		return err
	}
	if *memoryMB < -1 {
		return usageErr(fs, "--memory-limit-mb %d: want -1 (by the nodes and sites), 0 (none) or a positive size", *memoryMB)
	}
	// The sites' options: the [nntp] table of the file, then what up sets
	// for each site. Checked now, before anything starts.
	site := newsd.DefaultOptions()
	sfs := flag.NewFlagSet("nntp", flag.ContinueOnError)
	site.RegisterFlags(sfs)
	if err := applyTable(cf, "nntp", sfs, &site); err != nil {
		return err
	}
	if err := o.ValidateSites(site); err != nil {
		return usageErr(fs, "%v", cf.Explain("nntp", err))
	}
	stopProfile, err := profile.start()
	if err != nil {
		return err
	}
	defer stopProfile()
	relaxGC()
	limitMemory(o.MemoryLimitMB(*memoryMB, nodeLimitMB, site))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	say := func(format string, args ...any) { fmt.Fprintf(stdout, format+"\n", args...) }
	// The signal ends the wait for the ring; once started, the nodes stop
	// after the sites, which use them until closed: Close stops them.
	d, err := localdeploy.Start(ctx, o, site, log, say)
	if ctx.Err() != nil {
		say("stopped")
		return nil
	}
	if err != nil {
		return err
	}
	printHowTo(stdout, o, d)
	<-ctx.Done()
	say("stopping...")
	if err := d.Close(); err != nil {
		fmt.Fprintln(stderr, err)
	}
	say("stopped")
	return nil
}

// printHowTo says how to look at the deployment.
func printHowTo(out io.Writer, o localdeploy.Options, d *localdeploy.Deployment) {
	fmt.Fprintf(out, "\nLook at it from another terminal:\n")
	if b := d.OperatorBundle(); b != "" {
		fmt.Fprintf(out, "  export TRIAD_TLS=%s   # the nodes run mutual TLS with their own CA in %s; commands need a certificate\n", b, d.CADir)
	}
	fmt.Fprintf(out, "  go run ./cmd/triad ring --addr %s\n  go run ./cmd/triad lookup --addr %s --text hello\n", d.Nodes[0].Addr, d.Nodes[len(d.Nodes)-1].Addr)
	if o.HTTPPort > 0 {
		fmt.Fprintf(out, "  status page and Prometheus metrics (/metrics) of each node (and of the site it serves):\n")
		for i, n := range d.Nodes {
			site := ""
			if len(d.Sites) > 0 && i%o.Nodes == 0 {
				site = ", " + localdeploy.SiteName(i/o.Nodes)
			}
			fmt.Fprintf(out, "    http://%s/   (node %d%s)\n", n.HTTP.Addr, i, site)
		}
		fmt.Fprintf(out, "  the whole deployment, every node up or down, from any of them:\n    http://%s/deployment\n", d.Nodes[0].HTTP.Addr)
	}
	if len(d.Sites) > 0 {
		fmt.Fprintf(out, "  point a newsreader at any site (no password from this machine):\n")
		for i, s := range d.Sites {
			fmt.Fprintf(out, "    news://%s/   (%s)\n", s.Addr, localdeploy.SiteName(i))
		}
		admin := d.Sites[0].Addr
		if d.Sites[0].PeerAddr != "" {
			admin = d.Sites[0].PeerAddr // the operator's certificate is taken on the TLS listener
		}
		fmt.Fprintf(out, "  add or remove a newsgroup at every site, see the feeds (as ctlinnd does):\n    go run ./cmd/triad news newgroup local.new --addr %s\n    go run ./cmd/triad news feeds --addr %s\n", admin, admin)
		fmt.Fprintf(out, `  an article posted at one site is read at every other one, e.g.:
  python3 -c "import nntplib; s = nntplib.NNTP('127.0.0.1', %d); print(s.group('local.test'))"
  each site's feeds to the others: %s
`, o.NNTPPort+len(d.Sites)-1, filepath.Join(o.Data, localdeploy.SiteName(0), "feeds.status"))
	}
	addrs := make([]string, len(d.Nodes))
	for i, n := range d.Nodes {
		addrs[i] = n.Addr
	}
	fmt.Fprintf(out, `  every node runs D2, triad's file system's store: make a volume, then mount it (as root):
    go run ./cmd/triad fs mkvol myvol --addr %[1]s
    mkdir -p /tmp/myvol && go run ./cmd/triad fs mount myvol /tmp/myvol --addr %[1]s
`, strings.Join(addrs, ","))
	fmt.Fprintf(out, `
Note: these %d nodes share this machine's disk. Each counts as a machine of its
own, so a block's replicas are on distinct nodes but not on distinct disks: a
local ring for trying triad, not for keeping data. On real machines, run one
'triad node' per machine (or give nodes that share a disk one --machine name).
`, len(d.Nodes))
	fmt.Fprintln(out, "Press Ctrl-C to stop every node (each leaves the ring gracefully).")
}
