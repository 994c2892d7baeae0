package main

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
	st := &fsStatus{Volume: "v", Lease: &l}
	var b strings.Builder
	st.printVolume(&b)
	if !strings.Contains(b.String(), "lease live: held by mount 01000000000000000000000000000000") || !strings.Contains(b.String(), "(3s left)") {
		t.Fatalf("a lease with 3 s left when read prints:\n%s", b.String())
	}
}
