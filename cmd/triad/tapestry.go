package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"
	"time"

	"triad/internal/id"
	"triad/internal/tapestry"
	"triad/internal/wire"
)

// tapestryCallTimeout bounds a call to a Tapestry node: a route waits up to
// the node's route timeout (10 s by default) for its outcome, and a publish
// for the object's write to the node's disk.
const tapestryCallTimeout = 30 * time.Second

// tapestryCall sends one request to the Tapestry node at --addr, stopped by
// an interrupt or the call timeout.
func tapestryCall(node nodeFlags, m wire.Msg) (wire.Msg, error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, tapestryCallTimeout)
	defer cancel()
	return node.call(ctx, m)
}

var publishAbout = help("publish")

func runPublish(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("publish", "publish FILE [--addr ADDR] [--expire DURATION]", publishAbout, stderr)
	node := addNodeFlags(fs, "`address` of the Tapestry node that serves the object")
	expire := fs.Duration("expire", 0, "stop serving and publishing the object after this long (0: until unpublished)")
	pos, err := parseMixed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageErr(fs, "want one FILE (or - for standard input)")
	}
	if *expire < 0 {
		return usageErr(fs, "--expire %v: want 0 (until unpublished) or a positive duration", *expire)
	}
	data, err := readInput(pos[0])
	if err != nil {
		return err
	}
	if len(data) == 0 {
		return fmt.Errorf("%s is empty: there is nothing to publish", pos[0])
	}
	m, err := tapestryCall(node, &wire.TapPublish{Data: data, TTLMillis: uint64(*expire / time.Millisecond), App: tapestry.AppDOLR})
	if err != nil {
		return fmt.Errorf("%s: %w", pos[0], err)
	}
	p, ok := m.(*wire.TapPublishDone)
	if !ok {
		return fmt.Errorf("%s answered %T", *node.addr, m)
	}
	fmt.Fprintln(stdout, p.Key)
	return nil
}

var unpublishAbout = help("unpublish")

func runUnpublish(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("unpublish", "unpublish KEY [--addr ADDR]", unpublishAbout, stderr)
	node := addNodeFlags(fs, "`address` of the Tapestry node that published KEY")
	key, err := keyArg(fs, args)
	if err != nil {
		return err
	}
	if _, err := tapestryCall(node, &wire.TapUnpublish{Key: key}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: unpublished from %s\n", key, *node.addr)
	return nil
}

var locateAbout = help("locate")

// locatedJSON is what locate --json prints: one line.
type locatedJSON struct {
	Key       string   `json:"key"`
	Found     bool     `json:"found"`
	Servers   []string `json:"servers"`
	Root      string   `json:"root"`
	RootID    string   `json:"root_id"`
	Hops      int      `json:"hops"`
	Path      []string `json:"path"`
	LatencyMS float64  `json:"latency_ms"`
}

func runLocate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("locate", "locate KEY [--addr ADDR] [--all] [--json]", locateAbout, stderr)
	node := addNodeFlags(fs, "`address` of the Tapestry node to route from")
	all := fs.Bool("all", false, "go on to the key's root and list every server it knows")
	asJSON := fs.Bool("json", false, "print one JSON line (also when not found)")
	key, err := keyArg(fs, args)
	if err != nil {
		return err
	}
	l, err := locate(node, &wire.TapLocate{Key: key, All: *all, App: tapestry.AppDOLR})
	if err != nil {
		return err
	}
	if *asJSON {
		out := locatedJSON{Key: key.String(), Found: l.Found, Servers: addrs(l.Servers), Root: l.Root.Addr, RootID: l.Root.ID.String(),
			Hops: int(l.Hops), Path: addrs(l.Path), LatencyMS: float64(l.Micros) / 1000}
		if err := printJSON(stdout, out); err != nil {
			return err
		}
	}
	if !l.Found {
		return notFound(l)
	}
	if *asJSON {
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	for i, s := range l.Servers {
		fmt.Fprintf(tw, "server\t%s\t%s\n", s.Addr, s.ID.Short())
		if !*all && i == 0 {
			break
		}
	}
	if *all { // a route that met a pointer on the way knows no root
		fmt.Fprintf(tw, "root\t%s\t%s\n", l.Root.Addr, l.Root.ID.Short())
	}
	fmt.Fprintf(tw, "hops\t%d\n", l.Hops)
	fmt.Fprintf(tw, "path\t%s\n", strings.Join(addrs(l.Path), " -> "))
	fmt.Fprintf(tw, "latency\t%v\n", time.Duration(l.Micros)*time.Microsecond)
	return tw.Flush()
}

// locate sends a TapLocate and checks the reply's type.
func locate(node nodeFlags, m *wire.TapLocate) (*wire.TapLocateDone, error) {
	r, err := tapestryCall(node, m)
	if err != nil {
		return nil, err
	}
	l, ok := r.(*wire.TapLocateDone)
	if !ok {
		return nil, fmt.Errorf("%s answered %T", *node.addr, r)
	}
	return l, nil
}

// notFound is the error of a route that reached the key's root and no
// server.
func notFound(l *wire.TapLocateDone) error {
	return fmt.Errorf("not found at root %s (%s) after %d hops", l.Root.Addr, l.Root.ID.Short(), l.Hops)
}

func addrs(refs []wire.NodeRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.Addr
	}
	return out
}

var fetchAbout = help("fetch")

func runFetch(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("fetch", "fetch KEY [--addr ADDR] [-o FILE]", fetchAbout, stderr)
	node := addNodeFlags(fs, "`address` of the Tapestry node to route from")
	out := fs.String("o", "", "write to this `file` instead of standard output")
	key, err := keyArg(fs, args)
	if err != nil {
		return err
	}
	if *out != "" {
		if err := checkOutputPath(*out); err != nil {
			return usageErr(fs, "-o: %v", err)
		}
	}
	l, err := locate(node, &wire.TapLocate{Key: key, Fetch: true, App: tapestry.AppDOLR})
	if err != nil {
		return err
	}
	if !l.Found {
		return notFound(l)
	}
	server := "?"
	if len(l.Servers) > 0 {
		server = l.Servers[0].Addr
	}
	if got := id.Key(l.Data); got != key {
		return fmt.Errorf("%s answered %d bytes whose key is %s, not %s", server, len(l.Data), got, key)
	}
	if *out == "" {
		_, err = stdout.Write(l.Data)
		return err
	}
	return writeFileAtomic(*out, l.Data)
}

var tapestryAbout = help("tapestry")

func runTapestry(args []string, stdout, stderr io.Writer) error {
	return runGroup("tapestry", tapestryAbout, map[string]func([]string, io.Writer, io.Writer) error{
		"table":  func(a []string, o, e io.Writer) error { return runTapestryShow("table", a, o, e) },
		"status": func(a []string, o, e io.Writer) error { return runTapestryShow("status", a, o, e) },
	}, args, stdout, stderr)
}

func runTapestryShow(name string, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("tapestry "+name, "tapestry "+name+" [--addr ADDR] [--json]", tapestryAbout, stderr)
	node := addNodeFlags(fs, "`address` of the Tapestry node to ask")
	asJSON := fs.Bool("json", false, "print one JSON line")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	m, err := tapestryCall(node, &wire.TapGetTable{})
	if err != nil {
		return err
	}
	t, ok := m.(*wire.TapTable)
	if !ok {
		return fmt.Errorf("%s answered %T", *node.addr, m)
	}
	if name == "status" {
		return printTapestryStatus(stdout, t, *asJSON)
	}
	return printTapestryTable(stdout, t, *asJSON)
}

func printTapestryStatus(w io.Writer, t *wire.TapTable, asJSON bool) error {
	if asJSON {
		counters := map[string]uint64{}
		for _, c := range t.Counters {
			counters[c.Name] = c.Value
		}
		return printJSON(w, map[string]any{"self": t.Self.Addr, "id": t.Self.ID.String(), "joined": t.Joined, "counters": counters})
	}
	state := "joined"
	if !t.Joined {
		state = "joining"
	}
	fmt.Fprintf(w, "tapestry on %s (%s): %s\n", t.Self.Addr, t.Self.ID, state)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range t.Counters {
		fmt.Fprintf(tw, "  %s\t%d\n", c.Name, c.Value)
	}
	return tw.Flush()
}

func printTapestryTable(w io.Writer, t *wire.TapTable, asJSON bool) error {
	if asJSON {
		return printJSON(w, tapestry.TableJSON(t))
	}
	return tapestry.WriteTable(w, t)
}
