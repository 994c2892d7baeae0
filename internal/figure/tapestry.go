package figure

import (
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"triad/internal/exp"
)

// Bin widths of the RDP figures: the paper's 5 ms of one-way latency for
// objects (§V-B2), and as much again of RTT for nodes.
const (
	nodeBinMs   = 10
	objectBinMs = 5
)

// Tapestry draws the figures of a sim tapestry run whose experiments ran,
// in the paper's order, two panels to a row: Figs. 13-14 (rdp), 15
// (optim), 19-20 (massive) and 21-22 (churn).
func Tapestry(res exp.TapestryResult, path string) error {
	s := res.Series
	if s == nil {
		return fmt.Errorf("figure: no tapestry series to draw")
	}
	var panels []*plot.Plot
	add := func(p *plot.Plot, err error) error {
		if err == nil {
			panels = append(panels, p)
		}
		return err
	}
	if len(s.NodeRDP) > 0 || len(s.ObjectRDP) > 0 {
		if err := add(nodeRDP(s.NodeRDP)); err != nil {
			return err
		}
		if err := add(objectRDP(s.ObjectRDP)); err != nil {
			return err
		}
	}
	if len(s.OptBase) > 0 || len(s.Opt) > 0 {
		if err := add(optRDP(res)); err != nil {
			return err
		}
	}
	for _, run := range []struct {
		s       *exp.TapSuccess
		figures [2]string
		what    string
	}{
		{s.Massive, [2]string{"Fig. 19", "Fig. 20"}, "massive failure and join"},
		{s.Churn, [2]string{"Fig. 21", "Fig. 22"}, "churn"},
	} {
		if run.s == nil {
			continue
		}
		if err := add(successPanel(run.s, run.figures[0]+": route to node under "+run.what, true)); err != nil {
			return err
		}
		if err := add(successPanel(run.s, run.figures[1]+": route to object under "+run.what, false)); err != nil {
			return err
		}
	}
	if len(panels) == 0 {
		return fmt.Errorf("figure: no tapestry experiment that draws a figure ran (rdp, optim, massive, churn)")
	}
	return saveGrid(panels, path)
}

// saveGrid draws panels two to a row into path.
func saveGrid(panels []*plot.Plot, path string) error {
	rows := (len(panels) + 1) / 2
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, 2)
	}
	for i, p := range panels {
		grid[i/2][i%2] = p
	}
	return saveTiles(grid, 2*width, vg.Length(rows)*height, path)
}

// rdpLines adds one line per quantile of bins (minimum, median, 90th
// percentile), in colour c, dashed for all but the 90th percentile.
func rdpLines(p *plot.Plot, bins []exp.TapRDPBin, c color.Color, label string, which ...string) error {
	for _, q := range which {
		pts := make(plotter.XYs, len(bins))
		for i, b := range bins {
			y := map[string]float64{"minimum": b.Min, "median": b.Median, "90th percentile": b.P90}[q]
			pts[i] = plotter.XY{X: b.Ms, Y: y}
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return err
		}
		l.Color, l.Width = c, vg.Points(1.5)
		switch q {
		case "median":
			l.Dashes = []vg.Length{vg.Points(5), vg.Points(3)}
		case "minimum":
			l.Dashes = []vg.Length{vg.Points(1.5), vg.Points(2)}
		}
		p.Add(l)
		p.Legend.Add(label+q, l)
	}
	return nil
}

// rdpPlot is a panel of RDP against a direct latency.
func rdpPlot(title, x string) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.X.Label.Text, p.Y.Label.Text = title, x, "RDP"
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.X.Min, p.Y.Min = 0, 0
	return p
}

// nodeRDP is Fig. 13: route-to-node RDP by the pair's RTT.
func nodeRDP(pts []exp.TapRDP) (*plot.Plot, error) {
	p := rdpPlot("Fig. 13: route to node", fmt.Sprintf("RTT between the nodes (ms, %d-ms bins)", nodeBinMs))
	bins := exp.TapRDPBins(pts, nodeBinMs)
	if len(bins) == 0 {
		return nil, fmt.Errorf("figure: no route to node to draw")
	}
	return p, rdpLines(p, bins, blue, "", "90th percentile", "median", "minimum")
}

// objectRDP is Fig. 14: route-to-object RDP by one-way latency.
func objectRDP(pts []exp.TapRDP) (*plot.Plot, error) {
	p := rdpPlot("Fig. 14: route to object", fmt.Sprintf("one-way latency to the object (ms, %d-ms bins)", objectBinMs))
	bins := exp.TapRDPBins(pts, objectBinMs)
	if len(bins) == 0 {
		return nil, fmt.Errorf("figure: no route to object to draw")
	}
	return p, rdpLines(p, bins, blue, "", "90th percentile", "median", "minimum")
}

// optRDP is Fig. 15: route-to-object RDP with the extra pointers (k, l,
// m) = (1, 1, 1) against none, each with its pointers per object. Its RDP
// axis is logarithmic: the local area, where the pointers matter, spans
// tens of times the wide area's RDP.
func optRDP(res exp.TapestryResult) (*plot.Plot, error) {
	p := rdpPlot("Fig. 15: route to object, extra pointers (k, l, m)", fmt.Sprintf("one-way latency to the object (ms, %d-ms bins)", objectBinMs))
	p.Y.Label.Text = "RDP (log scale)"
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Y.Min = 0.5
	for _, v := range []struct {
		pts       []exp.TapRDP
		name      string
		perObject float64
		c         color.Color
	}{
		{res.Series.OptBase, "(0,0,0)", res.BasePointersPerObject, grey},
		{res.Series.Opt, "(1,1,1)", res.OptPointersPerObject, red},
	} {
		bins := exp.TapRDPBins(v.pts, objectBinMs)
		if len(bins) == 0 {
			return nil, fmt.Errorf("figure: no %s route to object to draw", v.name)
		}
		label := fmt.Sprintf("%s [%.1f pointers/object] ", v.name, v.perObject)
		if err := rdpLines(p, bins, v.c, label, "90th percentile", "median"); err != nil {
			return nil, err
		}
	}
	p.Y.Min = math.Max(p.Y.Min, 0.01) // a log scale starts above 0
	return p, nil
}

// successPanel is the percentage of routes to nodes (or to objects)
// started in each bucket that were correct, with the membership events
// marked.
func successPanel(s *exp.TapSuccess, title string, toNode bool) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = fmt.Sprintf("minutes (%v buckets)", s.Bucket)
	p.Y.Label.Text = "% of routes correct"
	var pts plotter.XYs
	lowest := 100.0
	for _, b := range s.Buckets {
		ok, sent := b.ObjectOK, b.ObjectSent
		if toNode {
			ok, sent = b.NodeOK, b.NodeSent
		}
		if sent == 0 {
			continue
		}
		y := 100 * float64(ok) / float64(sent)
		lowest = math.Min(lowest, y)
		pts = append(pts, plotter.XY{X: (b.At + s.Bucket/2).Minutes(), Y: y})
	}
	if len(pts) == 0 {
		return nil, fmt.Errorf("figure: no routes in %q", title)
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return nil, err
	}
	l.Color, l.Width = blue, vg.Points(1.5)
	p.Add(plotter.NewGrid(), l)
	p.X.Min, p.Y.Min, p.Y.Max = 0, math.Min(95, math.Floor(lowest)-1), 100.5
	if err := markEvents(p, s.Events, p.Y.Min, p.Y.Max); err != nil {
		return nil, err
	}
	return p, nil
}

// markEvents draws each event as a dashed vertical line from lo to hi,
// labelled at its top.
func markEvents(p *plot.Plot, events []exp.TapEvent, lo, hi float64) error {
	var labels plotter.XYLabels
	for _, e := range events {
		x := e.At.Minutes()
		l, err := plotter.NewLine(plotter.XYs{{X: x, Y: lo}, {X: x, Y: hi}})
		if err != nil {
			return err
		}
		l.Color, l.Dashes = red, []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		labels.XYs = append(labels.XYs, plotter.XY{X: x, Y: lo + 0.1*(hi-lo)})
		labels.Labels = append(labels.Labels, " "+e.Label)
	}
	if len(events) == 0 {
		return nil
	}
	ls, err := plotter.NewLabels(labels)
	if err != nil {
		return err
	}
	p.Add(ls)
	return nil
}
