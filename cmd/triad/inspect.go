package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"triad/internal/id"
	"triad/internal/wire"
)

var ringAbout = help("ring")

func runRing(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("ring", "ring --addr ADDR [--json]", ringAbout, stderr)
	node := addNodeFlags(fs, "`address` of the node to ask")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	timeout := fs.Duration("timeout", 5*time.Second, "give up after this long")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	m, err := node.call(ctx, &wire.GetRingInfo{})
	if err != nil {
		return err
	}
	info, ok := m.(*wire.RingInfo)
	if !ok {
		return fmt.Errorf("%s answered %T", *node.addr, m)
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(ringJSON(info))
	}
	for _, v := range info.Vnodes {
		fmt.Fprintf(stdout, "vnode %s at %s\n", v.Self.ID, v.Self.Addr)
		printList(stdout, "predecessors", v.Preds)
		printList(stdout, "successors", v.Succs)
		fmt.Fprintf(stdout, "  fingers (%d):\n", len(v.Fingers))
		for _, f := range v.Fingers {
			fmt.Fprintf(stdout, "    2^%-3d %s  %s\n", f.Bit, f.Node.ID, f.Node.Addr)
		}
	}
	return nil
}

func printList(w io.Writer, name string, list []wire.NodeRef) {
	fmt.Fprintf(w, "  %s (%d):\n", name, len(list))
	for i, n := range list {
		fmt.Fprintf(w, "    %-3d %s  %s\n", i, n.ID, n.Addr)
	}
}

// JSON forms for scripts and tests.
type nodeJSON struct {
	ID   string `json:"id"`
	Addr string `json:"addr"`
}

type fingerJSON struct {
	Bit  uint32   `json:"bit"`
	Node nodeJSON `json:"node"`
}

type vnodeJSON struct {
	Self    nodeJSON     `json:"self"`
	Preds   []nodeJSON   `json:"predecessors"`
	Succs   []nodeJSON   `json:"successors"`
	Fingers []fingerJSON `json:"fingers"`
}

func toJSON(list []wire.NodeRef) []nodeJSON {
	out := []nodeJSON{}
	for _, n := range list {
		out = append(out, nodeJSON{n.ID.String(), n.Addr})
	}
	return out
}

func ringJSON(info *wire.RingInfo) map[string]any {
	var vs []vnodeJSON
	for _, v := range info.Vnodes {
		vj := vnodeJSON{Self: nodeJSON{v.Self.ID.String(), v.Self.Addr}, Preds: toJSON(v.Preds), Succs: toJSON(v.Succs), Fingers: []fingerJSON{}}
		for _, f := range v.Fingers {
			vj.Fingers = append(vj.Fingers, fingerJSON{f.Bit, nodeJSON{f.Node.ID.String(), f.Node.Addr}})
		}
		vs = append(vs, vj)
	}
	return map[string]any{"vnodes": vs}
}

var lookupAbout = help("lookup")

func runLookup(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("lookup", "lookup [--addr ADDR] [--text] [--json] KEY", lookupAbout, stderr)
	node := addNodeFlags(fs, "`address` of the node to ask")
	text := fs.Bool("text", false, "KEY is text to hash, not a hex ID")
	asJSON := fs.Bool("json", false, "print JSON")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErr(fs, "want exactly one KEY")
	}
	var key id.ID
	if *text {
		key = id.Key([]byte(fs.Arg(0)))
	} else {
		var err error
		if key, err = id.Parse(fs.Arg(0), id.Bytes); err != nil {
			return usageErr(fs, "%v (use --text to look up the hash of a string)", err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	start := time.Now()
	m, err := node.call(ctx, &wire.ClientLookup{Key: key})
	if err != nil {
		return err
	}
	done, ok := m.(*wire.LookupDone)
	if !ok {
		return fmt.Errorf("%s answered %T", *node.addr, m)
	}
	if done.Failed != "" {
		return fmt.Errorf("lookup of %s failed: %s", key, done.Failed)
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{
			"key": key.String(), "hops": done.Hops, "successors": toJSON(done.Succs),
			"ms": float64(time.Since(start).Microseconds()) / 1000,
		})
	}
	fmt.Fprintf(stdout, "key %s: %d hop(s), %v\n", key, done.Hops, time.Since(start).Round(time.Microsecond))
	for i, n := range done.Succs {
		role := ""
		if i == 0 {
			role = "  <- responsible"
		}
		fmt.Fprintf(stdout, "  %-3d %s  %s%s\n", i, n.ID, n.Addr, role)
	}
	return nil
}
