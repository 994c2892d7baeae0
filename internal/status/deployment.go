package status

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"triad/internal/survey"
)

// Deployment is the whole deployment as one daemon sees it (issue 47):
// a survey from its own node (internal/survey), taken at most every
// Every and kept for the pages asked meanwhile, each survey asking again
// the nodes that answered one before, so that a node killed stays on the page,
// in red, after its neighbours have dropped it.
type Deployment struct {
	Options survey.Options
	Every   time.Duration // 2 s

	mu sync.Mutex
	// pages are the daemons' own pages by node address, where known
	// (triad up knows them all; SetLocal); each node's row links to its
	// page.
	pages map[string]string
	last  *survey.Report
	known []string // the nodes that answered a survey
	err   error
	at    time.Time
}

// SetLocal gives what a deployment run in one process (triad up) knows
// of itself: each node's page by its address, and its news sites
// (survey.Options.Local).
func (d *Deployment) SetLocal(pages map[string]string, sites func() []survey.Site) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pages, d.Options.Local = pages, sites
	d.last = nil
}

// page is a node's own page, "" if unknown.
func (d *Deployment) page(addr string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.pages[addr]
}

// report is the latest survey, taken anew when it is older than Every.
func (d *Deployment) report(ctx context.Context) (*survey.Report, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	every := d.Every
	if every <= 0 {
		every = 2 * time.Second
	}
	if d.last != nil && time.Since(d.at) < every {
		return d.last, d.err
	}
	o := d.Options
	o.Known = d.known
	r, err := survey.Take(ctx, o)
	d.at, d.err = time.Now(), err
	if err == nil {
		d.last, d.known = &r, r.Answered(d.known)
	}
	return d.last, err
}

// deploymentView is what deployment.html draws.
type deploymentView struct {
	Name   string
	Err    string
	Report *survey.Report
	Rows   []deploymentRow
}

// deploymentRow is a node's row: its state (its texts are survey's, as
// triad status prints them), its page and what to show in red.
type deploymentRow struct {
	survey.Node
	Page          string
	D2Bad, TapBad bool
}

func (d *Deployment) serve(name string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 8*time.Second)
		defer cancel()
		v := deploymentView{Name: name}
		rep, err := d.report(ctx)
		if err != nil {
			v.Err = err.Error()
		}
		if rep != nil {
			v.Report = rep
			for _, n := range rep.Nodes {
				row := deploymentRow{Node: n, Page: d.page(n.Addr), D2Bad: n.D2 != nil && !n.D2.Joined, TapBad: n.Tapestry != nil && !n.Tapestry.Joined}
				v.Rows = append(v.Rows, row)
			}
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := deploymentPage.Execute(w, v); err != nil {
			fmt.Fprintf(w, "<p class=error>%s</p>", err)
		}
	}
}
