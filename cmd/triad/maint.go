package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"triad/internal/client"
	"triad/internal/maint"
	"triad/internal/wire"
)

var maintAbout = help("maint")

func runMaint(args []string, stdout, stderr io.Writer) error {
	return runGroup("maint", maintAbout, map[string]func([]string, io.Writer, io.Writer) error{
		"status": runMaintStatus,
		"pause":  func(a []string, o, e io.Writer) error { return runMaintControl("pause", true, a, o, e) },
		"resume": func(a []string, o, e io.Writer) error { return runMaintControl("resume", false, a, o, e) },
	}, args, stdout, stderr)
}

func runMaintStatus(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("maint status", "maint status [--addr ADDR] [--json]", maintAbout, stderr)
	node := addNodeFlags(fs, "`address` of the node to ask")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	st, err := maintCall[*wire.MaintStatus](node, &wire.GetMaintStatus{})
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, maint.StatusJSON(st))
	}
	return maint.WriteStatus(stdout, *node.addr, st, time.Now())
}

func runMaintControl(name string, pause bool, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("maint "+name, "maint "+name+" [--addr ADDR]", maintAbout, stderr)
	node := addNodeFlags(fs, "`address` of the node")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	if _, err := maintCall[wire.Msg](node, &wire.MaintControl{Pause: pause}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "maintenance on %s: %sd\n", *node.addr, name)
	return nil
}

// maintCall sends one request to the node at --addr, and takes an R back.
func maintCall[R wire.Msg](node nodeFlags, m wire.Msg) (R, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return client.Ask[R](ctx, node.target(), m)
}
