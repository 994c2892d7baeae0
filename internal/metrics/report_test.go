package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"triad/internal/deploy"
	"triad/internal/node"
)

// A protocol's own figures (deploy.Report) are written under its name:
// a gauge as it is, a counter with _total, each with its help; the
// metrics name no protocol's fields.
func TestProtocolReports(t *testing.T) {
	ch := make(chan prometheus.Metric, 16)
	e := emitter{ch}
	emitReport(e, deploy.Report{Protocol: "proto", Metrics: []node.Metric{
		{Name: "held", Help: "Things held now.", Gauge: true, Value: 3},
		{Name: "sent", Help: "Things sent.", Value: 7},
	}})
	close(ch)
	got := map[string]string{}
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			t.Fatal(err)
		}
		desc := m.Desc().String()
		switch {
		case pb.Gauge != nil:
			got[desc] = "gauge"
			if pb.Gauge.GetValue() != 3 {
				t.Errorf("gauge %s = %v", desc, pb.Gauge.GetValue())
			}
		case pb.Counter != nil:
			got[desc] = "counter"
			if pb.Counter.GetValue() != 7 {
				t.Errorf("counter %s = %v", desc, pb.Counter.GetValue())
			}
		}
	}
	if len(got) != 2 {
		t.Fatalf("%d metrics: %v", len(got), got)
	}
	for desc, kind := range got {
		switch kind {
		case "gauge":
			if !contains(desc, `fqName: "triad_proto_held"`) || !contains(desc, "Things held now.") {
				t.Errorf("gauge %s", desc)
			}
		case "counter":
			if !contains(desc, `fqName: "triad_proto_sent_total"`) {
				t.Errorf("counter %s", desc)
			}
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
