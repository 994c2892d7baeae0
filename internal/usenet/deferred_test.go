package usenet

import (
	"errors"
	"fmt"
	"testing"

	"triad/internal/fault"
)

// deferred marks the site's own failures temporary (fault.ErrBusy, the
// server's "try later"), and leaves the article's own as they are:
// refusals for good (issue 28).
func TestDeferredMarksOnlyTheSitesOwnFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		busy bool
	}{
		{"news.db failing", errors.New("bolt: write failed"), true},
		{"the spool busy", fmt.Errorf("%w: window full", fault.ErrBusy), true},
		{"too large for the spool", fault.ErrTooLarge, false},
		{"a duplicate seen late", ErrDuplicate, false},
	} {
		err := deferred(tc.err)
		if busy := errors.Is(err, fault.ErrBusy); busy != tc.busy || !errors.Is(err, tc.err) {
			t.Errorf("%s: deferred gives %v (busy %v), want busy %v, wrapping the error", tc.name, err, busy, tc.busy)
		}
	}
	if deferred(nil) != nil {
		t.Error("deferred(nil) is not nil")
	}
}
