package maint

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"triad/internal/wire"
)

// WriteStatus writes a node's maintenance status (a MaintStatus, as
// GetMaintStatus answers) for people: running or paused, the counters,
// and each vnode's neighbours and last round, as seen at now.
func WriteStatus(w io.Writer, addr string, st *wire.MaintStatus, now time.Time) error {
	state := "running"
	if st.Paused {
		state = "paused"
	}
	fmt.Fprintf(w, "maintenance on %s: %s\n", addr, state)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range st.Counters {
		fmt.Fprintf(tw, "  %s\t%d\n", c.Name, c.Value)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, v := range st.Vnodes {
		last := "no round yet"
		if v.LastRound != 0 {
			last = "last round ended " + now.Sub(time.Unix(0, v.LastRound)).Round(time.Second).String() + " ago"
		}
		fmt.Fprintf(w, "vnode %s: successor %s, predecessor %s; %s", v.Self.ID.Short(), v.Succ.Addr, v.Pred.Addr, last)
		if v.Running {
			fmt.Fprintf(w, "; a round is running, %d keys (%d bytes) to fetch", v.Queued, v.QueuedSize)
		}
		fmt.Fprintln(w)
	}
	return nil
}

// StatusJSON is the status as JSON values: paused, counters by name, and
// the vnodes.
func StatusJSON(st *wire.MaintStatus) map[string]any {
	counters := map[string]uint64{}
	for _, c := range st.Counters {
		counters[c.Name] = c.Value
	}
	var vnodes []map[string]any
	for _, v := range st.Vnodes {
		vnodes = append(vnodes, map[string]any{"self": v.Self.ID.String(), "successor": v.Succ.Addr, "predecessor": v.Pred.Addr,
			"last_round_unix_ns": v.LastRound, "running": v.Running, "queued": v.Queued, "queued_bytes": v.QueuedSize})
	}
	return map[string]any{"paused": st.Paused, "counters": counters, "vnodes": vnodes}
}
