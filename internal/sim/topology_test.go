package sim

import (
	"testing"
	"time"
)

// TestTopologyShape checks the synthetic WAN looks like the Internet the
// papers measured on: median RTT in 70-150 ms, a heavy tail, asymmetry-free
// pairs, and not a uniform random matrix (hosts in one region are closer).
func TestTopologyShape(t *testing.T) {
	topo := NewTopology(2048, 1)
	st := topo.Stats(50000)
	t.Logf("rtt: p10 %v median %v p90 %v p99 %v max %v", st.P10, st.Median, st.P90, st.P99, st.Max)
	if st.Median < 70*time.Millisecond || st.Median > 150*time.Millisecond {
		t.Errorf("median RTT %v not in [70ms, 150ms]", st.Median)
	}
	if st.P99 < 2*st.Median {
		t.Errorf("p99 %v is not a heavy tail over median %v", st.P99, st.Median)
	}
	var same, cross []time.Duration
	for a := 0; a < 400; a++ {
		for b := a + 1; b < 400; b++ {
			if topo.RTT(a, b) != topo.RTT(b, a) {
				t.Fatalf("rtt(%d,%d) asymmetric", a, b)
			}
			if topo.Region(a) == topo.Region(b) {
				same = append(same, topo.RTT(a, b))
			} else {
				cross = append(cross, topo.RTT(a, b))
			}
		}
	}
	if avg(same) > avg(cross)/2 {
		t.Errorf("same-region RTT %v not well below cross-region %v", avg(same), avg(cross))
	}
	if NewTopology(2048, 1).RTT(5, 900) != topo.RTT(5, 900) || NewTopology(2048, 2).RTT(5, 900) == topo.RTT(5, 900) {
		t.Error("topology is not a function of its seed")
	}
}

func avg(ds []time.Duration) time.Duration {
	var t time.Duration
	for _, d := range ds {
		t += d
	}
	return t / time.Duration(len(ds))
}

// A flat topology has no geography: two hosts are the mean of their
// delays apart each way, and each keeps its own link.
func TestFlatTopology(t *testing.T) {
	topo := NewFlatTopology([]FlatHost{{Delay: 20 * time.Millisecond, UpBps: 600e3, DownBps: 2.4e6}, {Delay: 10 * time.Millisecond, UpBps: 1e6, DownBps: 4e6}})
	if rtt := topo.RTT(0, 1); rtt != 30*time.Millisecond {
		t.Errorf("RTT %v, want 30ms (one way 15 ms)", rtt)
	}
	if topo.RTT(1, 1) != 0 || topo.UpBps(0) != 600e3 || topo.DownBps(1) != 4e6 {
		t.Errorf("RTT to itself %v, links %v and %v", topo.RTT(1, 1), topo.UpBps(0), topo.DownBps(1))
	}
	topo.Grow(5)
	if topo.Len() != 2 {
		t.Errorf("a flat topology grew to %d hosts", topo.Len())
	}
}
