package figure

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"triad/internal/exp"
)

// Size of every figure.
const (
	width  = 16 * vg.Centimeter
	height = 10 * vg.Centimeter
)

var (
	blue   = color.RGBA{R: 0x45, G: 0x7b, B: 0x9d, A: 0xff}
	red    = color.RGBA{R: 0xe6, G: 0x39, B: 0x46, A: 0xff}
	grey   = color.RGBA{R: 0x88, G: 0x88, B: 0x88, A: 0xff}
	yellow = color.RGBA{R: 0xe9, G: 0xc4, B: 0x6a, A: 0xff}
)

// RingHops draws the distribution of lookup path lengths of a sim ring
// run.
func RingHops(res exp.RingResult, path string) error {
	var total int
	for _, n := range res.HopCounts {
		total += n
	}
	if total == 0 {
		return fmt.Errorf("figure: no lookups to draw")
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Lookup path length, %d nodes × %d vnodes (seed %d)", res.Nodes, res.Vnodes, res.Seed)
	p.X.Label.Text = "hops"
	p.Y.Label.Text = "fraction of lookups"
	vals := make(plotter.Values, len(res.HopCounts))
	for i, n := range res.HopCounts {
		vals[i] = float64(n) / float64(total)
	}
	bars, err := plotter.NewBarChart(vals, vg.Points(12))
	if err != nil {
		return err
	}
	bars.Color, bars.LineStyle.Width = blue, 0
	p.Add(bars)
	half := 0.5 * math.Log2(float64(res.Nodes*res.Vnodes))
	line, err := plotter.NewLine(plotter.XYs{{X: half, Y: 0}, {X: half, Y: maxOf(vals)}})
	if err != nil {
		return err
	}
	line.Color, line.Dashes = red, []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(line)
	p.Legend.Add(fmt.Sprintf("measured (mean %.2f)", res.MeanHops), bars)
	p.Legend.Add(fmt.Sprintf("½·log2 N = %.2f", half), line)
	p.Legend.Top = true
	return p.Save(width, height, path)
}

// DHashLatency draws the latency comparisons of a sim dhash run: one
// group of bars per way of fetching, median and 90th percentile.
func DHashLatency(res exp.DHashResult, path string) error {
	if len(res.Rows) == 0 {
		return fmt.Errorf("figure: no rows to draw")
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("DHash++ latencies, %d nodes (seed %d)", res.Nodes, res.Seed)
	p.Y.Label.Text = "latency (ms)"
	med, p90 := make(plotter.Values, len(res.Rows)), make(plotter.Values, len(res.Rows))
	names := make([]string, len(res.Rows))
	for i, r := range res.Rows {
		med[i], p90[i], names[i] = r.MedianMs, r.P90Ms, r.Name
	}
	if err := pairedBars(p, vg.Points(10), med, p90, blue, yellow, "median", "90th percentile"); err != nil {
		return err
	}
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = -0.9, -0.4
	return p.Save(2*width, 1.3*height, path)
}

// ReplicaCDF draws Figure 5 of the durability run: the fraction of the
// objects live at the end with at most n durable copies.
func ReplicaCDF(res exp.TraceResult, path string) error {
	if len(res.ReplicaCDF) == 0 {
		return fmt.Errorf("figure: no copies to draw")
	}
	p := plot.New()
	p.Title.Text = fmt.Sprintf("Durable copies per object after %.0f days (k = %d, seed %d)", res.SimDays, res.Replicas, res.Seed)
	p.X.Label.Text = "durable copies"
	p.Y.Label.Text = "fraction of objects with at most this many"
	pts := make(plotter.XYs, 0, 2*len(res.ReplicaCDF))
	for n, f := range res.ReplicaCDF {
		if n > 0 {
			pts = append(pts, plotter.XY{X: float64(n), Y: res.ReplicaCDF[n-1]})
		}
		pts = append(pts, plotter.XY{X: float64(n), Y: f})
	}
	line, err := plotter.NewLine(pts)
	if err != nil {
		return err
	}
	line.Color, line.Width = blue, vg.Points(2)
	p.Add(line, plotter.NewGrid())
	kLine, err := plotter.NewLine(plotter.XYs{{X: float64(res.Replicas), Y: 0}, {X: float64(res.Replicas), Y: 1}})
	if err != nil {
		return err
	}
	kLine.Color, kLine.Dashes = red, []vg.Length{vg.Points(4), vg.Points(3)}
	p.Add(kLine)
	p.Legend.Add(fmt.Sprintf("%d objects lost", res.ObjectsLost), line)
	p.Legend.Add("k", kLine)
	p.Legend.Left, p.Legend.Top = true, true
	p.Y.Min, p.Y.Max = 0, 1
	return p.Save(width, height, path)
}

// Scenarios draws, per Passing Tone scenario, the bytes maintenance moved
// and the bytes that had to move.
func Scenarios(rs []exp.ScenarioResult, path string) error {
	if len(rs) == 0 {
		return fmt.Errorf("figure: no scenarios to draw")
	}
	p := plot.New()
	p.Title.Text = "Passing Tone: bytes moved against bytes needed"
	p.Y.Label.Text = "MB"
	moved, needed := make(plotter.Values, len(rs)), make(plotter.Values, len(rs))
	names := make([]string, len(rs))
	for i, r := range rs {
		moved[i], needed[i], names[i] = float64(r.BytesMoved)/1e6, float64(r.BytesNeeded)/1e6, r.Scenario
	}
	if err := pairedBars(p, vg.Points(14), moved, needed, blue, grey, "moved", "needed"); err != nil {
		return err
	}
	p.NominalX(names...)
	return p.Save(width, height, path)
}

// pairedBars adds two bars of width w side by side at each x, a and b,
// with their colours and legend entries.
func pairedBars(p *plot.Plot, w vg.Length, a, b plotter.Values, ca, cb color.Color, la, lb string) error {
	ba, err := plotter.NewBarChart(a, w)
	if err != nil {
		return err
	}
	bb, err := plotter.NewBarChart(b, w)
	if err != nil {
		return err
	}
	ba.Color, bb.Color = ca, cb
	ba.LineStyle.Width, bb.LineStyle.Width = 0, 0
	ba.Offset, bb.Offset = -w/2, w/2
	p.Add(ba, bb)
	p.Legend.Add(la, ba)
	p.Legend.Add(lb, bb)
	p.Legend.Top = true
	return nil
}

// saveTiles draws a grid of plots (nil: an empty tile), aligned, on one
// canvas of w by h, into path in the format its extension names.
func saveTiles(plots [][]*plot.Plot, w, h vg.Length, path string) error {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	c, err := draw.NewFormattedCanvas(w, h, format)
	if err != nil {
		return err
	}
	pad := vg.Millimeter * 2
	tiles := draw.Tiles{Rows: len(plots), Cols: len(plots[0]), PadX: 2 * pad, PadY: 2 * pad, PadTop: pad, PadBottom: pad, PadLeft: pad, PadRight: pad}
	canvases := plot.Align(plots, tiles, draw.New(c))
	for i := range plots {
		for j, p := range plots[i] {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func maxOf(vs plotter.Values) float64 {
	m := 0.0
	for _, v := range vs {
		m = math.Max(m, v)
	}
	return m
}
