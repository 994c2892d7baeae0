package figure

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"

	"triad/internal/exp"
)

// schemeColors gives each congestion scheme its colour in every panel.
var schemeColors = map[string]color.Color{"none": grey, "loss": yellow, "backpressure": blue, "marking": red}

// Congestion draws a sim congestion run as the paper's figures, in four
// panels: Figure 4 (throughput against offered load), and Figure 5's
// throughput, retransmissions and delay against cross-load.
func Congestion(res exp.Congestion, path string) error {
	if len(res.Figure4) == 0 && len(res.Figure5) == 0 {
		return fmt.Errorf("figure: no congestion runs to draw")
	}
	type panel struct {
		title, x, y string
		pts         []exp.CongestionPoint
		xOf, yOf    func(exp.CongestionPoint) float64
	}
	offered := func(p exp.CongestionPoint) float64 { return p.Offered }
	cross := func(p exp.CongestionPoint) float64 { return 100 * p.CrossLoad }
	thr := func(p exp.CongestionPoint) float64 { return p.Throughput }
	panels := []panel{
		{"Fig. 4: throughput against offered load", "offered requests/s per peer", "achieved requests/s per peer", res.Figure4, offered, thr},
		{"Fig. 5(a): throughput under cross-load", "cross-load %", "requests/s per peer", res.Figure5, cross, thr},
		{"Fig. 5(b): retransmissions", "cross-load %", "% of requests sent", res.Figure5, cross, func(p exp.CongestionPoint) float64 { return 100 * p.RetransmitFraction }},
		{"Fig. 5(c): delay", "cross-load %", "ms from send to ack", res.Figure5, cross, func(p exp.CongestionPoint) float64 { return p.DelayMs }},
	}
	plots := [][]*plot.Plot{{nil, nil}, {nil, nil}}
	for i, pn := range panels {
		p := plot.New()
		p.Title.Text, p.X.Label.Text, p.Y.Label.Text = pn.title, pn.x, pn.y
		var order []string
		series := map[string]plotter.XYs{}
		for _, pt := range pn.pts {
			if _, ok := series[pt.Scheme]; !ok {
				order = append(order, pt.Scheme)
			}
			series[pt.Scheme] = append(series[pt.Scheme], plotter.XY{X: pn.xOf(pt), Y: pn.yOf(pt)})
		}
		for _, s := range order {
			l, pts, err := plotter.NewLinePoints(series[s])
			if err != nil {
				return err
			}
			l.Color, pts.Color = schemeColors[s], schemeColors[s]
			p.Add(l, pts)
			p.Legend.Add(s, l, pts)
		}
		p.Legend.Top, p.Legend.Left = true, i == 0 // Figure 4 climbs to the right
		plots[i/2][i%2] = p
	}
	return saveTiles(plots, 2*width, 2*height, path)
}
