package noded

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"

	"triad/internal/client"
	"triad/internal/ring"
	"triad/internal/testutil"
	"triad/internal/wire"
)

// fakeHost answers every GetRingInfo on a port of 127.0.0.1 with info, as
// a hostile ring member could, until the test ends; it returns its address.
func fakeHost(t *testing.T, info func(addr string) *wire.RingInfo) string {
	t.Helper()
	return testutil.Serve(t, func(c net.Conn) {
		defer c.Close()
		frame, err := wire.ReadFrame(c, nil, wire.MaxFrameBytes)
		if err != nil {
			return
		}
		e, err := wire.Decode(frame)
		if err != nil {
			return
		}
		// The connection's own end is the address the host listens on.
		wire.WriteFrame(c, wire.Envelope{Kind: wire.Reply, ReqID: e.ReqID, Msg: info(c.LocalAddr().String())})
	})
}

// A surveyed host lists what it likes: forged IDs, hosts that never
// answer, the same vnodes twice, the new node itself. The survey keeps
// only derived references of hosts that answered, each once, none of the
// new node's.
func TestSurveyKeepsOnlyWhatItCanCheck(t *testing.T) {
	const self = "127.0.0.1:9"
	closed := "127.0.0.1:1" // nothing listens: it never answers
	honest := fakeHost(t, func(addr string) *wire.RingInfo {
		return &wire.RingInfo{Vnodes: []wire.VnodeInfo{{Self: wire.NodeRef{ID: ring.VnodeID(addr, 0), Addr: addr}}}}
	})
	bootstrap := fakeHost(t, func(addr string) *wire.RingInfo {
		v := wire.VnodeInfo{Self: wire.NodeRef{ID: ring.VnodeID(addr, 0), Addr: addr}}
		for i := range ring.MaxVnodes {
			v.Preds = append(v.Preds, wire.NodeRef{ID: ring.VnodeID(honest, i), Addr: honest})
		}
		v.Succs = append(v.Succs,
			wire.NodeRef{ID: ring.VnodeID(closed, 0), Addr: closed},        // a host that never answers
			wire.NodeRef{ID: ring.VnodeID("127.0.0.1:2", 0), Addr: honest}, // an ID of another address
			wire.NodeRef{ID: ring.VnodeID(self, 3), Addr: self})            // the new node itself
		return &wire.RingInfo{Vnodes: []wire.VnodeInfo{v, v}} // listed twice
	})
	got, err := survey(context.Background(), self, bootstrap, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var want []wire.NodeRef
	want = append(want, wire.NodeRef{ID: ring.VnodeID(bootstrap, 0), Addr: bootstrap})
	for i := range ring.MaxVnodes {
		want = append(want, wire.NodeRef{ID: ring.VnodeID(honest, i), Addr: honest})
	}
	slices.SortFunc(want, func(a, b wire.NodeRef) int { return a.ID.Cmp(b.ID) })
	if !slices.Equal(got, want) {
		t.Fatalf("survey kept %d references, want the %d derived ones of the hosts that answered:\n%v", len(got), len(want), fmt.Sprint(got))
	}
}

// A ring of more hosts than the survey asks is not seen whole: the survey
// fails, and the node spreads its vnodes by themselves.
func TestSurveyRefusesARingTooLarge(t *testing.T) {
	bootstrap := fakeHost(t, func(addr string) *wire.RingInfo {
		v := wire.VnodeInfo{Self: wire.NodeRef{ID: ring.VnodeID(addr, 0), Addr: addr}}
		for p := range surveyHosts {
			a := fmt.Sprintf("127.0.0.1:%d", 1000+p) // none of them answers
			r := wire.NodeRef{ID: ring.VnodeID(a, 0), Addr: a}
			if p%2 == 0 {
				v.Succs = append(v.Succs, r)
			} else {
				v.Preds = append(v.Preds, r)
			}
		}
		return &wire.RingInfo{Vnodes: []wire.VnodeInfo{v}}
	})
	_, err := survey(context.Background(), "127.0.0.1:9", bootstrap, client.Options{})
	if err == nil || !strings.Contains(err.Error(), "more than 64 hosts") {
		t.Fatalf("a ring of %d hosts: %v, want the survey to say it has more than %d", surveyHosts+1, err, surveyHosts)
	}
}
