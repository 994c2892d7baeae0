package peering

import (
	"testing"

	"triad/internal/usenet"
)

// A feed that is not connected is idle when it has nothing to send and
// has not failed since it last connected (a feeder connects only to
// send), and down otherwise; `triad status` counts a down feed with
// articles waiting as a problem.
func TestFeedState(t *testing.T) {
	for _, tc := range []struct {
		st   PeerStatus
		want string
	}{
		{PeerStatus{Connected: true}, "connected"},
		{PeerStatus{}, "idle"},
		{PeerStatus{Backlog: usenet.PeerBacklog{Records: 3}}, "down"},
		{PeerStatus{LastError: "dial tcp: connection refused"}, "down"},
	} {
		if got := feedState(tc.st); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.st, got, tc.want)
		}
	}
}
