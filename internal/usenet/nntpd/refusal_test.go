package nntpd

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"triad/internal/fault"
	"triad/internal/nntp"
	"triad/internal/usenet"
)

// Only a failure marked temporary is "try later": a refusal nobody listed
// is a refusal for good, so that a sender does not retry it for ever
// (issue 28). Before, any error feedResult did not know was "try later".
func TestUnknownFailureIsARefusal(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want nntp.Code
	}{
		{"a refusal nobody listed", errors.New("usenet: a new check failed"), nntp.CodeTakeThisRejected},
		{"a known refusal", fmt.Errorf("%w: no Newsgroups", usenet.ErrBadArticle), nntp.CodeTakeThisRejected},
		{"a duplicate", usenet.ErrDuplicate, nntp.CodeTakeThisRejected},
		{"the spool busy", fmt.Errorf("%w: window full", fault.ErrBusy), nntp.CodeCheckLater},
		{"news.db failing", fmt.Errorf("%w: %w", fault.ErrBusy, errors.New("bolt: write failed")), nntp.CodeCheckLater},
		{"the site closing", usenet.ErrSiteClosed, nntp.CodeCheckLater},
		{"too large for the spool", fault.ErrTooLarge, nntp.CodeTakeThisRejected},
	} {
		if got, text := feedResult(tc.err); got != tc.want {
			t.Errorf("%s: %d %q, want %d", tc.name, got, text, tc.want)
		}
	}
}

// A status line is one line, whatever its text holds: an error joined
// with errors.Join has a line break, which ended the reply early and left
// the rest where the client reads its next reply (a spool's "busy" joined
// with the engine's "full" did).
func TestStatusLineIsOneLine(t *testing.T) {
	line := string(statusLine(nntp.CodeTransferLater, "Try later: %v", errors.Join(fault.ErrBusy, fault.ErrFull)))
	if !strings.HasSuffix(line, "\r\n") || strings.ContainsAny(strings.TrimSuffix(line, "\r\n"), "\r\n") {
		t.Fatalf("status line %q is not one CRLF-ended line", line)
	}
	if !strings.HasPrefix(line, "436 Try later: busy, try later disk full") {
		t.Errorf("status line %q", line)
	}
}
