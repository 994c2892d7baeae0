package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"
	"time"

	"triad/internal/survey"
)

var deploymentAbout = help("deployment")

func runStatus(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("status", "status [--addr NODE] [--site SITE] [--tls BUNDLE] [--json] [--watch DURATION]", deploymentAbout, stderr)
	node := addNodeFlags(fs, "`address` of any node of the deployment")
	site := fs.String("site", "", "a news site's `address` for triad news (with TLS its TLS listener): it and every site it feeds are shown too")
	asJSON := fs.Bool("json", false, "print each survey as one JSON object")
	watch := fs.Duration("watch", 0, "survey again every `interval` until Ctrl-C (0: once)")
	timeout := fs.Duration("timeout", 3*time.Second, "how long a node may take to answer before it counts as down")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	if *watch < 0 || *timeout <= 0 {
		return usageErr(fs, "--watch and --timeout: want a positive duration (--watch 0: once)")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	o := survey.Options{Addr: *node.addr, TLSDir: *node.tls, Site: *site, Timeout: *timeout}
	var last *survey.Report
	for {
		r, err := survey.Take(ctx, o)
		if err != nil && last != nil && ctx.Err() != nil {
			return surveyVerdict(*last) // Ctrl-C during a survey: the one before stands
		}
		if err != nil {
			return err
		}
		last = &r
		if *asJSON {
			if err := printJSON(stdout, r); err != nil {
				return err
			}
		} else {
			printSurvey(stdout, r)
		}
		if *watch == 0 || ctx.Err() != nil {
			return surveyVerdict(r)
		}
		o.Known = r.Answered(o.Known)
		select {
		case <-ctx.Done():
			return surveyVerdict(r)
		case <-time.After(*watch):
		}
	}
}

// surveyVerdict is the exit: nil when nothing needs the operator, else
// the first problem, on one line.
func surveyVerdict(r survey.Report) error {
	switch n := len(r.Problems); n {
	case 0:
		return nil
	case 1:
		return errors.New(r.Problems[0])
	default:
		return fmt.Errorf("%s (and %d more)", r.Problems[0], n-1)
	}
}

// printSurvey writes r as tables: nodes, sites, then the problems.
func printSurvey(w io.Writer, r survey.Report) {
	fmt.Fprintf(w, "%s: %d nodes\n", r.At.Format(time.RFC3339), len(r.Nodes))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "node\tstate\tversion\tuptime\tdisk free\tvnodes\tmaintenance\tD2\tTapestry")
	for _, n := range r.Nodes {
		if !n.Up {
			fmt.Fprintf(tw, "%s\tDOWN\t\t\t\t\t\t\t\n", n.Addr)
			continue
		}
		fmt.Fprintf(tw, "%s\tup\t%s\t%s\t%s\t%d (≥%d successors)\t%s\t%s\t%s\n", n.Addr, orDash(n.Version), uptimeCell(n.UptimeS), diskCell(n.DiskFree, n.DiskTotal),
			n.Vnodes, n.MinSuccessors, maintCell(n.Maint), d2Cell(n.D2), tapCell(n.Tapestry))
	}
	tw.Flush()
	for _, s := range r.Sites {
		name := s.Name
		if name == "" {
			name = s.Addr
		}
		if !s.Up {
			fmt.Fprintf(w, "site %s (%s): DOWN: %s\n", name, s.Addr, s.Error)
			continue
		}
		fmt.Fprintf(w, "site %s (%s): %d feeds\n", name, s.Addr, len(s.Feeds))
		for _, f := range s.Feeds {
			fmt.Fprintf(w, "  %s\n", f)
		}
	}
	if len(r.Problems) == 0 {
		fmt.Fprintln(w, "nothing needs the operator")
		return
	}
	fmt.Fprintln(w, "needs the operator:")
	for _, p := range r.Problems {
		fmt.Fprintf(w, "  %s\n", p)
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func uptimeCell(s float64) string {
	if s <= 0 {
		return "-"
	}
	return time.Duration(s * float64(time.Second)).Round(time.Second).String()
}

func diskCell(free, total uint64) string {
	if total == 0 {
		return "-"
	}
	return fmt.Sprintf("%s of %s", humanBytes(free), humanBytes(total))
}

func maintCell(m *survey.Maint) string {
	switch {
	case m == nil:
		return "-"
	case m.Paused:
		return "paused"
	case m.LastRoundAgo < 0:
		return "no round yet"
	}
	s := fmt.Sprintf("last round %s ago", time.Duration(m.LastRoundAgo*float64(time.Second)).Round(time.Second))
	if m.Queued > 0 {
		s += fmt.Sprintf(", %d queued", m.Queued)
	}
	return s
}

func d2Cell(d *survey.D2) string {
	if d == nil {
		return "-"
	}
	state := "joined"
	if !d.Joined {
		state = "NOT JOINED"
	}
	s := fmt.Sprintf("%s, %s used", state, humanBytes(d.Usage))
	if d.Capacity > 0 {
		s += " of " + humanBytes(d.Capacity)
	}
	if len(d.Distrusted) > 0 {
		s += ", distrusts " + strings.Join(d.Distrusted, " ")
	}
	return s
}

func tapCell(t *survey.Tapestry) string {
	switch {
	case t == nil:
		return "-"
	case !t.Joined:
		return "NOT JOINED"
	}
	return fmt.Sprintf("joined, %d links", t.Links)
}

// humanBytes is n in B, KiB, MiB or GiB.
func humanBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
