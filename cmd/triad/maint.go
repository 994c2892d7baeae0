package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

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
	m, err := maintCall(node, &wire.GetMaintStatus{})
	if err != nil {
		return err
	}
	st, ok := m.(*wire.MaintStatus)
	if !ok {
		return fmt.Errorf("%s answered %T", *node.addr, m)
	}
	if *asJSON {
		out := map[string]any{"paused": st.Paused}
		counters := map[string]uint64{}
		for _, c := range st.Counters {
			counters[c.Name] = c.Value
		}
		out["counters"] = counters
		var vnodes []map[string]any
		for _, v := range st.Vnodes {
			vnodes = append(vnodes, map[string]any{"self": v.Self.ID.String(), "successor": v.Succ.Addr, "predecessor": v.Pred.Addr,
				"last_round_unix_ns": v.LastRound, "running": v.Running, "queued": v.Queued, "queued_bytes": v.QueuedSize})
		}
		out["vnodes"] = vnodes
		return json.NewEncoder(stdout).Encode(out)
	}
	state := "running"
	if st.Paused {
		state = "paused"
	}
	fmt.Fprintf(stdout, "maintenance on %s: %s\n", *node.addr, state)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	for _, c := range st.Counters {
		fmt.Fprintf(tw, "  %s\t%d\n", c.Name, c.Value)
	}
	tw.Flush()
	for _, v := range st.Vnodes {
		last := "no round yet"
		if v.LastRound != 0 {
			last = "last round ended " + time.Since(time.Unix(0, v.LastRound)).Round(time.Second).String() + " ago"
		}
		fmt.Fprintf(stdout, "vnode %s: successor %s, predecessor %s; %s", v.Self.ID.Short(), v.Succ.Addr, v.Pred.Addr, last)
		if v.Running {
			fmt.Fprintf(stdout, "; a round is running, %d keys (%d bytes) to fetch", v.Queued, v.QueuedSize)
		}
		fmt.Fprintln(stdout)
	}
	return nil
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
	if _, err := maintCall(node, &wire.MaintControl{Pause: pause}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "maintenance on %s: %sd\n", *node.addr, name)
	return nil
}

func maintCall(node nodeFlags, m wire.Msg) (wire.Msg, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return node.call(ctx, m)
}
