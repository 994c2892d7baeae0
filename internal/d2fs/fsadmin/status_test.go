package fsadmin

import (
	"strings"
	"testing"
	"time"

	"triad/internal/d2fs"
)

// The lease's time left is the time at which it was read, not at which
// the status is printed: the holders and nodes asked in between may take
// seconds, and a live lease then printed as lapsed "2s ago" (a TestFS run
// failed so).
func TestStatusLeaseLeftAtRead(t *testing.T) {
	read := time.Now().Add(-10 * time.Second) // the read, 10 s before printing
	l := leaseOf(d2fs.LeaseStatus{Found: true, Holder: [16]byte{1}, Expiry: read.Add(3 * time.Second), Live: true}, read)
	st := &Status{Volume: "v", Lease: &l}
	var b strings.Builder
	st.printVolume(&b)
	if !strings.Contains(b.String(), "lease live: held by mount 01000000000000000000000000000000") || !strings.Contains(b.String(), "(3s left)") {
		t.Fatalf("a lease with 3 s left when read prints:\n%s", b.String())
	}
}

// A node's line says what its D2 is doing, and names the partners it
// distrusts.
func TestNodeText(t *testing.T) {
	for _, c := range []struct {
		n    Node
		want []string
	}{
		{Node{Addr: "a", D2: "joined", UsageBytes: 2048, CapacityBytes: 1 << 20, Replicas: 3}, []string{"D2 on the ring", "2048 bytes (2.0 KiB) of 1048576 bytes (1.0 MiB) (r = 3)"}},
		{Node{Addr: "a", D2: "joining", Replicas: 3}, []string{"still joining", JoiningHint, "no capacity set"}},
		{Node{Addr: "a", D2: "joined", Distrusted: []string{"b:1", "c:2"}}, []string{"it distrusts b:1, c:2"}},
		{Node{Addr: "a", D2: "no answer", Error: "dial tcp: refused"}, []string{"no answer: dial tcp: refused"}},
	} {
		got := nodeText(c.n)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("nodeText(%+v) = %q, want it to say %q", c.n, got, w)
			}
		}
	}
}
