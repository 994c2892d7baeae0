package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
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
		fmt.Fprintf(tw, "%s\tup\t%s\t%s\t%s\t%d (≥%d successors)\t%s\t%s\t%s\n", n.Addr, n.VersionText(), n.UptimeText(), n.DiskText(),
			n.Vnodes, n.MinSuccessors, n.MaintText(), n.D2Text(), n.TapestryText())
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
