package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"

	"triad/internal/files"
	"triad/internal/tapestry"
	"triad/internal/tapestry/tapclient"
)

// tapestryContext bounds a call to a Tapestry node: stopped by an
// interrupt or after tapclient.CallTimeout.
func tapestryContext() (context.Context, context.CancelFunc) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	ctx, cancel := context.WithTimeout(ctx, tapclient.CallTimeout)
	return ctx, func() { cancel(); stop() }
}

var publishAbout = help("publish")

func runPublish(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("publish", "publish FILE [--addr ADDR] [--expire DURATION]", publishAbout, stderr)
	node := addNodeFlags(fs, "`address` of the Tapestry node that serves the object")
	expire := addDurationFlag(fs, "expire", 0, "stop serving and publishing the object after this long (90m, 12h, 30d; 0: until unpublished)")
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
	data, err := files.ReadInput(pos[0], os.Stdin)
	if err != nil {
		return err
	}
	ctx, cancel := tapestryContext()
	defer cancel()
	key, err := tapclient.Publish(ctx, node.target(), pos[0], data, *expire)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, key)
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
	ctx, cancel := tapestryContext()
	defer cancel()
	if err := tapclient.Unpublish(ctx, node.target(), key); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: unpublished from %s\n", key, *node.addr)
	return nil
}

var locateAbout = help("locate")

func runLocate(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("locate", "locate KEY [--addr ADDR] [--all] [--json]", locateAbout, stderr)
	node := addNodeFlags(fs, "`address` of the Tapestry node to route from")
	all := fs.Bool("all", false, "go on to the key's root and list every server it knows")
	asJSON := fs.Bool("json", false, "print one JSON line (also when not found)")
	key, err := keyArg(fs, args)
	if err != nil {
		return err
	}
	ctx, cancel := tapestryContext()
	defer cancel()
	l, err := tapclient.Locate(ctx, node.target(), key, *all)
	if l != nil && *asJSON {
		if err := printJSON(stdout, tapclient.LocatedJSON(key, l)); err != nil {
			return err
		}
	}
	if err != nil || *asJSON {
		return err
	}
	return tapclient.WriteLocated(stdout, l, *all)
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
		if err := files.CheckOutput(*out); err != nil {
			return usageErr(fs, "-o: %v", err)
		}
	}
	ctx, cancel := tapestryContext()
	defer cancel()
	data, err := tapclient.Fetch(ctx, node.target(), key)
	if err != nil {
		return err
	}
	if *out == "" {
		_, err = stdout.Write(data)
		return err
	}
	return files.WriteAtomic(*out, data)
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
	ctx, cancel := tapestryContext()
	defer cancel()
	t, err := tapclient.Table(ctx, node.target())
	switch {
	case err != nil:
		return err
	case name == "status" && *asJSON:
		return printJSON(stdout, tapclient.StatusJSON(t))
	case name == "status":
		return tapclient.WriteStatus(stdout, t)
	case *asJSON:
		return printJSON(stdout, tapestry.TableJSON(t))
	}
	return tapestry.WriteTable(stdout, t)
}
