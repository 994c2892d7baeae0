package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"triad/internal/client"
	"triad/internal/id"
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
	info, err := client.Ring(ctx, node.target())
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(client.RingJSON(info))
	}
	return client.WriteRing(stdout, info)
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
	done, err := client.Lookup(ctx, node.target(), key)
	if err != nil {
		return err
	}
	if *asJSON {
		return json.NewEncoder(stdout).Encode(map[string]any{
			"key": key.String(), "hops": done.Hops, "successors": client.RefsJSON(done.Succs),
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
