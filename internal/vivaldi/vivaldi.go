package vivaldi

import (
	"math"
	"math/rand/v2"
	"time"

	"triad/internal/wire"
)

// Tuning from the Vivaldi paper: cc sets how far a sample moves the
// coordinate, ce how fast the error estimate adapts.
const (
	cc = 0.25
	ce = 0.25
	// minHeight keeps the height (the access link) positive, as the paper's
	// height vectors require.
	minHeight = 0.01
	// maxPeers bounds the remembered peer coordinates; when full the table
	// is cleared, not pruned, so that map order never matters.
	maxPeers = 4096
)

// Model is one node's coordinate and the coordinates its peers last
// reported.
type Model struct {
	self  wire.Coord
	peers map[string]wire.Coord
	// Samples counts observations, for status pages and tests.
	Samples uint64
}

// New returns a model at the origin with the largest error: a new node
// trusts its coordinate least, so its first samples move it furthest and
// move its peers least.
func New() *Model {
	return &Model{self: wire.Coord{Height: minHeight, Error: 1}, peers: make(map[string]wire.Coord)}
}

// Coord is the node's current coordinate.
func (m *Model) Coord() wire.Coord { return m.self }

// Distance is the round-trip time, in milliseconds, that two coordinates
// predict: the distance in the plane plus both heights.
func Distance(a, b wire.Coord) float64 {
	return math.Hypot(a.X-b.X, a.Y-b.Y) + a.Height + b.Height
}

// Observe applies one round-trip sample to peer, whose coordinate was remote
// when it replied. r breaks ties when two nodes sit at the same point.
func (m *Model) Observe(peer string, rtt time.Duration, remote wire.Coord, r *rand.Rand) {
	if remote.IsZero() || rtt <= 0 {
		return
	}
	if len(m.peers) >= maxPeers {
		clear(m.peers)
	}
	m.peers[peer] = remote
	m.Samples++
	sample := max(float64(rtt)/float64(time.Millisecond), 0.001)
	ei, ej := m.self.Error, remote.Error
	if ej <= 0 {
		ej = 1
	}
	w := ei / (ei + ej)
	dist := Distance(m.self, remote)
	relErr := math.Abs(dist-sample) / sample
	m.self.Error = math.Min(relErr*ce*w+ei*(1-ce*w), 1)
	m.self.Error = math.Max(m.self.Error, 0.001)
	// Move along the unit vector from the peer to us, by a share of the
	// prediction's error: away if we predicted too short, closer if too
	// long. In height-vector arithmetic the heights add.
	force := cc * w * (sample - dist)
	dx, dy := m.self.X-remote.X, m.self.Y-remote.Y
	plane := math.Hypot(dx, dy)
	if plane < 1e-9 {
		a := r.Float64() * 2 * math.Pi
		dx, dy, plane = math.Cos(a), math.Sin(a), 1
	}
	norm := plane + m.self.Height + remote.Height
	m.self.X += force * dx / norm
	m.self.Y += force * dy / norm
	m.self.Height = math.Max(m.self.Height+force*(m.self.Height+remote.Height)/norm, minHeight)
}

// Predict is the round-trip time to peer that the coordinates predict, with
// the larger of the two error estimates; ok is false for a peer never heard
// from.
func (m *Model) Predict(peer string) (rtt time.Duration, relErr float64, ok bool) {
	c, ok := m.peers[peer]
	if !ok {
		return 0, 0, false
	}
	ms := Distance(m.self, c)
	return time.Duration(ms * float64(time.Millisecond)), math.Max(m.self.Error, c.Error), true
}

// Forget drops what is known of peer (it was declared dead).
func (m *Model) Forget(peer string) { delete(m.peers, peer) }

// Peers returns a copy of the coordinates known for peers, by address.
func (m *Model) Peers() map[string]wire.Coord {
	out := make(map[string]wire.Coord, len(m.peers))
	for k, v := range m.peers {
		out[k] = v
	}
	return out
}
