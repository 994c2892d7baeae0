package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"triad/internal/config"
	"triad/internal/newsd"
	"triad/internal/noded"
)

var siteAbout = help("site")

// nodePrefix starts the name of each of the node's flags on triad site.
const nodePrefix = "node-"

func runSite(args []string, stdout, stderr io.Writer) error {
	news, node := newsd.DefaultOptions(), noded.DefaultOptions()
	fs := newFlags("site", "site --listen ADDR --data DIR --node-listen ADDR [--node-join ADDR] [nntp and node- flags]", siteAbout, stderr)
	nodeFlags := registerSiteFlags(fs, &news, &node)
	profile := addProfileFlag(fs, "the site until it stops")
	if err := parseSite(fs, nodeFlags, args, &news, &node); err != nil {
		return err
	}
	stopProfile, err := profile.startDaemon(siteMemoryLimitMB(&news))
	if err != nil {
		return err
	}
	defer stopProfile()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// The node outlives the news server: the server's last flush goes
	// through it.
	n, err := noded.Start(context.Background(), node, log.With("part", "node"))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "triad site: node listening on %s, data in %s, %d vnode(s):\n", n.Addr, n.Data, node.Vnodes)
	for _, x := range n.Host.State.IDs {
		fmt.Fprintf(stdout, "  %s\n", x)
	}
	report := func(s string) { fmt.Fprintf(stderr, "triad site: %s\n", s) }
	if err := n.WaitJoined(ctx, node.Join, node.JoinTimeout, report); err != nil || ctx.Err() != nil {
		return errors.Join(err, n.Close()) // a signal while joining: stopped
	}
	news.Node, news.Local = n.Addr, n.Local()
	site, err := newsd.Start(ctx, news, log.With("part", "news"))
	if err != nil {
		return errors.Join(err, n.Close())
	}
	fmt.Fprintf(stdout, "triad site: serving news on %s (%s), data in %s\n", site.Addr, strings.Join(site.Groups, ", "), news.Data)
	if n.HTTP != nil {
		fmt.Fprintf(stdout, "triad site: the node's status page on http://%s/, metrics on http://%s/metrics\n", n.HTTP.Addr, n.HTTP.Addr)
	}
	if site.HTTPAddr != "" {
		fmt.Fprintf(stdout, "triad site: the news server's status page on http://%s/, metrics on http://%s/metrics\n", site.HTTPAddr, site.HTTPAddr)
	}
	select {
	case <-ctx.Done():
	case <-waitNode(n):
		err = fmt.Errorf("the node stopped: %w", n.Wait())
	}
	return errors.Join(err, site.Close(), n.Close())
}

// nodeMemoryMB is the node's part of a site's soft memory limit: its
// driver's inbound and outbound byte budgets (64 MiB each by default),
// the entries its engine has not yet checkpointed, and room for the
// collector (a node alone: nodeLimitMB).
const nodeMemoryMB = 512

// siteMemoryLimitMB is the soft limit of a site process's Go memory: the
// news server's (its --memory-limit-mb on top of its article cache) and
// the node's beside it; 0 (none) if the news server has none.
func siteMemoryLimitMB(news *newsd.Options) int {
	if mb := news.GoMemoryLimitMB(); mb > 0 {
		return mb + nodeMemoryMB
	}
	return 0
}

// waitNode is closed when n has stopped.
func waitNode(n *noded.Node) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		n.Wait()
		close(done)
	}()
	return done
}

// registerSiteFlags defines on fs the news server's flags and the
// node's with nodePrefix; it returns the node's flags under their own
// names, bound to the same values.
func registerSiteFlags(fs *flag.FlagSet, news *newsd.Options, node *noded.Options) *flag.FlagSet {
	news.RegisterFlags(fs)
	nodeFlags := flag.NewFlagSet("node", flag.ContinueOnError)
	node.RegisterFlags(nodeFlags)
	nodeFlags.VisitAll(func(f *flag.Flag) { fs.Var(f.Value, nodePrefix+f.Name, f.Usage) })
	fs.Lookup(nodePrefix + "data").Usage = "the node's data `directory` (default: the node folder in --data)"
	return nodeFlags
}

// parseSite parses triad site's command line: the news server's flags,
// the node's with nodePrefix (bound to nodeFlags' values too), then the
// --config file's [nntp] and [node] tables where no flag was given, then
// each side's checks.
func parseSite(fs, nodeFlags *flag.FlagSet, args []string, news *newsd.Options, node *noded.Options) error {
	path := fs.String("config", "", "configuration `file` (TOML; see 'triad config'): its [node] and [nntp] tables; flags given here override it")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	// What the command line set on the node, nodeFlags knows too, so that
	// the file does not override it.
	var setErr error
	fs.Visit(func(f *flag.Flag) {
		if name, ok := strings.CutPrefix(f.Name, nodePrefix); ok && nodeFlags.Lookup(name) != nil {
			setErr = errors.Join(setErr, nodeFlags.Set(name, f.Value.String()))
		}
	})
	if setErr != nil {
		return usageErr(fs, "%v", setErr)
	}
	var f *config.File
	if *path != "" {
		var err error
		if f, err = config.Load(*path); err != nil {
			return err
		}
		if err := applyTable(f, "nntp", fs, news); err != nil {
			return err
		}
		if err := applyTable(f, "node", nodeFlags, node); err != nil {
			return err
		}
	}
	// A file written for triad node and triad nntp names the node in
	// [nntp] too: that is this site's own node, and nothing else may be.
	if news.Node != "" && news.Node != node.Listen {
		return usageErr(fs, "%v", f.Explain("nntp", fmt.Errorf("--node %s: a site's node is its own, --node-listen %s", news.Node, node.Listen)))
	}
	if node.Data == "" {
		node.Data = filepath.Join(news.Data, "node")
	}
	if node.SyncPeriod == 0 && node.SyncInterval == 0 {
		node.SyncPeriod = news.SyncPeriod // the site's promise is its node's
	}
	if err := node.Validate(); err != nil {
		if explained := f.Explain("node", err); explained != err {
			return usageErr(fs, "%v", explained) // a value from the file's [node], by its line
		}
		// The node's checks name its own flags: here they are node- ones.
		return usageErr(fs, "%s", strings.ReplaceAll(err.Error(), "--", "--"+nodePrefix))
	}
	news.Node = node.Listen // a site on the DHT; the address it listens on once it does
	if err := news.Validate(); err != nil {
		return usageErr(fs, "%v", f.Explain("nntp", err))
	}
	return nil
}
