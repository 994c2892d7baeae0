package figure

import (
	"fmt"
	"image/color"
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"triad/internal/exp"
)

var green = color.RGBA{R: 0x2a, G: 0x9d, B: 0x8f, A: 0xff}

// D2 draws the figures of a sim d2 run whose experiments ran, two panels
// to a row, in the paper's order: Fig. 2 (locality), Fig. 6 and Table 2
// (avail), Fig. 11 (balance), Figs. 7-9 (perf).
func D2(res exp.D2Result, path string) error {
	var panels []*plot.Plot
	if l := res.Locality; l != nil {
		panels = append(panels, barPanel(fmt.Sprintf("Fig. 2: nodes met per user-hour (%d users)", l.Users), "nodes per user-hour",
			[]string{"traditional", "ordered", "lower bound"}, []barSeries{{"", []float64{l.Traditional, l.Ordered, l.LowerBound}, blue}}))
	}
	if len(res.InterSeconds) > 0 {
		inters := make([]string, len(res.InterSeconds))
		for i, s := range res.InterSeconds {
			inters[i] = fmt.Sprintf("inter %g s", s)
		}
		panels = append(panels,
			barPanel(fmt.Sprintf("Fig. 6: task unavailability (%d trials)", res.Trials), "fraction of tasks failed", inters, []barSeries{
				{"block", res.Unavail["block"], grey}, {"file", res.Unavail["file"], yellow}, {"d2", res.Unavail["d2"], blue}}),
			barPanel("Table 2: replica groups per task", "replica groups", inters, []barSeries{
				{"block", res.GroupsPerTask["block"], grey}, {"d2", res.GroupsPerTask["d2"], blue}}))
	}
	if len(res.ImbalanceHourly) > 0 {
		p, err := imbalancePanel(res.ImbalanceHourly)
		if err != nil {
			return err
		}
		panels = append(panels, p)
	}
	if res.Perf != nil {
		panels = append(panels, perfPanels(res)...)
	}
	if len(panels) == 0 {
		return fmt.Errorf("figure: no d2 experiment ran")
	}
	return saveGrid(panels, path)
}

// imbalancePanel is Fig. 11: each hour's storage imbalance per placement.
func imbalancePanel(hourly map[string][]float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = "Fig. 11: storage imbalance after warm-up"
	p.X.Label.Text, p.Y.Label.Text = "hours", "std/mean of storage per host"
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	top := 0.0
	for _, s := range []struct {
		name string
		c    color.Color
	}{{"block", grey}, {"file", yellow}, {"block+balancing", red}, {"d2", blue}} {
		ys := hourly[s.name]
		if len(ys) == 0 {
			continue
		}
		pts := make(plotter.XYs, len(ys))
		for i, y := range ys {
			pts[i] = plotter.XY{X: float64(i + 1), Y: y}
			top = math.Max(top, y)
		}
		l, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		l.Color, l.Width = s.c, vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(s.name, l)
	}
	// Room above the lines for the legend.
	p.X.Min, p.Y.Min, p.Y.Max = 0, 0, 1.4*top
	return p, nil
}

// perfPanels are Figs. 7-8, d2's speedup over block (and over file) by
// size, and Fig. 9, the gateways' cache miss rate by size.
func perfPanels(res exp.D2Result) []*plot.Plot {
	sizes := make([]string, len(res.Perf.Nodes))
	for i, n := range res.Perf.Nodes {
		sizes[i] = strconv.Itoa(n) + " nodes"
	}
	var out []*plot.Plot
	for _, base := range []string{"block", "file"} {
		var series []barSeries
		for _, s := range []struct {
			mode string
			kbps int
			c    color.Color
		}{{"seq", 1500, blue}, {"seq", 384, green}, {"para", 1500, red}, {"para", 384, yellow}} {
			bs := barSeries{name: fmt.Sprintf("%s %d kbps", s.mode, s.kbps), c: s.c}
			for _, n := range res.Perf.Nodes {
				bs.vals = append(bs.vals, res.Speedup[fmt.Sprintf("%s/%d/%d/%s", base, n, s.kbps, s.mode)])
			}
			series = append(series, bs)
		}
		out = append(out, barPanel("Figs. 7-8: d2's speedup over "+base, base+"'s time over d2's", sizes, series))
	}
	var miss []barSeries
	for _, s := range []struct {
		place string
		c     color.Color
	}{{"block", grey}, {"file", yellow}, {"d2", blue}} {
		bs := barSeries{name: s.place, c: s.c}
		for _, n := range res.Perf.Nodes {
			bs.vals = append(bs.vals, res.CacheMissRate[fmt.Sprintf("%s/%d/seq", s.place, n)])
		}
		miss = append(miss, bs)
	}
	return append(out, barPanel("Fig. 9: lookup cache miss rate (seq)", "fraction of reads missed", sizes, miss))
}

// barSeries is one colour of bars, a value per category.
type barSeries struct {
	name string
	vals []float64
	c    color.Color
}

// barPanel draws series side by side in each category. Its value axis is
// logarithmic when the positive values span a decade or more; then a
// value of zero is drawn as a thick mark at the axis' floor, and the title
// says so.
func barPanel(title, ylabel string, categories []string, series []barSeries) *plot.Plot {
	p := plot.New()
	p.Title.Text, p.Y.Label.Text = title, ylabel
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	lo, hi, zero := math.Inf(1), 0.0, false
	for _, s := range series {
		for _, v := range s.vals {
			if v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			} else {
				zero = true
			}
		}
	}
	floor := 0.0
	p.Y.Min, p.Y.Max = 0, math.Max(hi*1.1, 1e-9)
	if hi > 0 && hi/lo >= 10 {
		floor = math.Pow(10, math.Floor(math.Log10(lo/2)))
		p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
		p.Y.Min, p.Y.Max = floor, hi*2
		p.Y.Label.Text += " (log scale)"
		if zero {
			p.Title.Text += fmt.Sprintf(" [0 drawn at the floor, %g]", floor)
		}
	}
	width := 0.8 / float64(len(series))
	for j, s := range series {
		b := bars{vals: s.vals, offset: -0.4 + float64(j)*width, width: width, floor: floor, c: s.c}
		p.Add(b)
		if s.name != "" {
			p.Legend.Add(s.name, b)
		}
	}
	p.NominalX(categories...)
	p.X.Min, p.X.Max = -0.5, float64(len(categories))-0.5
	return p
}

// bars is a plotter of one series' bars, rising from the value axis'
// minimum so that they also stand on a log axis, where gonum's bar chart
// (which starts at zero) cannot. A value at or below floor is a thick
// mark on the floor.
type bars struct {
	vals          []float64
	offset, width float64 // of each bar, in categories
	floor         float64
	c             color.Color
}

// Plot implements plot.Plotter.
func (b bars) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for i, v := range b.vals {
		x0, x1 := trX(float64(i)+b.offset), trX(float64(i)+b.offset+b.width)
		if v <= b.floor {
			y := trY(p.Y.Min)
			c.StrokeLine2(draw.LineStyle{Color: b.c, Width: vg.Points(4)}, x0, y, x1, y)
			continue
		}
		y0, y1 := trY(p.Y.Min), trY(math.Min(v, p.Y.Max))
		c.FillPolygon(b.c, []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
	}
}

// Thumbnail implements plot.Thumbnailer, for the legend.
func (b bars) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	c.FillPolygon(b.c, []vg.Point{r.Min, {X: r.Max.X, Y: r.Min.Y}, r.Max, {X: r.Min.X, Y: r.Max.Y}})
}
