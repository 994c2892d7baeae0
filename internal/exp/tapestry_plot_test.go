package exp

import (
	"reflect"
	"testing"
)

// TapRDPBins groups by direct latency into bins of the width given, in
// order, with each bin's minimum, median and 90th percentile.
func TestTapRDPBins(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pts     []TapRDP
		widthMs float64
		want    []TapRDPBin
	}{
		{"empty", nil, 5, []TapRDPBin{}},
		{"one", []TapRDP{{Ms: 7, RDP: 2}}, 5, []TapRDPBin{{Ms: 5, Routes: 1, Min: 2, Median: 2, P90: 2}}},
		{"two bins, out of order", []TapRDP{{Ms: 12, RDP: 1.5}, {Ms: 1, RDP: 4}, {Ms: 4.9, RDP: 2}, {Ms: 0, RDP: 3}},
			5, []TapRDPBin{{Ms: 0, Routes: 3, Min: 2, Median: 3, P90: 3}, {Ms: 10, Routes: 1, Min: 1.5, Median: 1.5, P90: 1.5}}},
		{"ten in a bin", []TapRDP{{0, 10}, {1, 9}, {2, 8}, {3, 7}, {4, 6}, {5, 5}, {6, 4}, {7, 3}, {8, 2}, {9, 1}},
			10, []TapRDPBin{{Ms: 0, Routes: 10, Min: 1, Median: 5, P90: 9}}},
	} {
		if got := TapRDPBins(tc.pts, tc.widthMs); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// The experiments that draw keep their points for --plot: one per routed
// pair and per successful locate, and the probe's buckets with the events
// inside them.
func TestTapestrySeries(t *testing.T) {
	res, err := RunTapestry(TapestryConfig{Seed: 3, Experiment: "rdp", Nodes: 48, Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	s := res.Series
	if len(s.NodeRDP) != res.RDPNodePairs-res.RDPNodeFailed || len(s.ObjectRDP) != res.RDPObjectLocates-res.RDPObjectFailed || len(s.NodeRDP) == 0 {
		t.Errorf("%d node points for %d pairs (%d failed), %d object points for %d locates (%d failed)",
			len(s.NodeRDP), res.RDPNodePairs, res.RDPNodeFailed, len(s.ObjectRDP), res.RDPObjectLocates, res.RDPObjectFailed)
	}
	if s.Massive != nil || s.Churn != nil || s.Opt != nil {
		t.Errorf("rdp alone filled other series: %+v", s)
	}
	res, err = RunTapestry(TapestryConfig{Seed: 3, Experiment: "massive", Nodes: 48, Quick: true})
	if err != nil {
		t.Fatal(err)
	}
	m := res.Series.Massive
	if m == nil || len(m.Events) != 2 || len(m.Buckets) == 0 {
		t.Fatalf("massive series %+v", m)
	}
	end := m.Buckets[len(m.Buckets)-1].At + m.Bucket
	sent := 0
	for _, b := range m.Buckets {
		sent += b.NodeSent
		if b.NodeOK > b.NodeSent || b.ObjectOK > b.ObjectSent {
			t.Errorf("bucket %+v: more correct than sent", b)
		}
	}
	for _, e := range m.Events {
		if e.At <= 0 || e.At >= end {
			t.Errorf("event %+v outside the buckets [0, %v)", e, end)
		}
	}
	if sent == 0 {
		t.Error("no routes counted")
	}
}
