package vivaldi

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"triad/internal/wire"
)

// TestConvergesOnAPlane checks that nodes whose true latencies come from
// points in a plane plus access delays learn coordinates that predict those
// latencies: after training on random pairs, the median relative error of
// predictions for pairs never sampled directly is small.
func TestConvergesOnAPlane(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 64
	type truth struct{ x, y, access float64 }
	real := make([]truth, n)
	for i := range real {
		real[i] = truth{r.Float64() * 100, r.Float64() * 100, 1 + r.Float64()*5}
	}
	rtt := func(a, b int) time.Duration {
		ms := math.Hypot(real[a].x-real[b].x, real[a].y-real[b].y) + real[a].access + real[b].access
		return time.Duration(ms * float64(time.Millisecond))
	}
	models := make([]*Model, n)
	for i := range models {
		models[i] = New()
	}
	// Each node samples only 8 fixed neighbours, as a ring node mostly
	// talks to its successors and fingers.
	for round := 0; round < 2000; round++ {
		for i := range models {
			j := (i + 1 + r.IntN(8)*7) % n
			models[i].Observe(fmt.Sprint(j), rtt(i, j), models[j].Coord(), r)
		}
	}
	var errs []float64
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i == j {
				continue
			}
			pred := Distance(models[i].Coord(), models[j].Coord())
			want := float64(rtt(i, j)) / float64(time.Millisecond)
			errs = append(errs, math.Abs(pred-want)/want)
		}
	}
	sort.Float64s(errs)
	if med := errs[len(errs)/2]; med > 0.15 {
		t.Fatalf("median relative error %.3f after training, want <= 0.15", med)
	}
	if e := models[0].Coord().Error; e > 0.5 {
		t.Errorf("node 0 still estimates its error at %.2f", e)
	}
}

func TestPredictNeedsAPeerCoordinate(t *testing.T) {
	m := New()
	if _, _, ok := m.Predict("p"); ok {
		t.Fatal("predicted a peer never heard from")
	}
	m.Observe("p", 0, wire.Coord{X: 1, Error: 1}, rand.New(rand.NewPCG(1, 1)))
	if _, _, ok := m.Predict("p"); ok {
		t.Fatal("a zero RTT sample was used")
	}
	m.Observe("p", 50*time.Millisecond, wire.Coord{X: 1, Height: 1, Error: 1}, rand.New(rand.NewPCG(1, 1)))
	if _, _, ok := m.Predict("p"); !ok {
		t.Fatal("no prediction after a sample")
	}
	m.Forget("p")
	if _, _, ok := m.Predict("p"); ok {
		t.Fatal("predicted a forgotten peer")
	}
}

// TestSamePointSplits checks that two nodes at the same point move apart
// rather than dividing by zero.
func TestSamePointSplits(t *testing.T) {
	a, b := New(), New()
	r := rand.New(rand.NewPCG(3, 3))
	for i := 0; i < 50; i++ {
		a.Observe("b", 40*time.Millisecond, b.Coord(), r)
		b.Observe("a", 40*time.Millisecond, a.Coord(), r)
	}
	c := a.Coord()
	if math.IsNaN(c.X) || math.IsNaN(c.Y) {
		t.Fatalf("coordinate went NaN: %+v", c)
	}
	if d := Distance(a.Coord(), b.Coord()); math.Abs(d-40) > 4 {
		t.Fatalf("predicted %.1f ms, want about 40", d)
	}
}
