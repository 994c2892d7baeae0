package fsadmin

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"triad/internal/d2fs"
)

// LastCommit commits a writable mount's changes before it unmounts, and
// says why they cannot be committed ("" if they were, or there are
// none): the lease was lost, or no node took the commit within timeout.
func LastCommit(f *d2fs.FS, timeout time.Duration) string {
	if f.ReadOnly() {
		return ""
	}
	if lost := f.Stats().LeaseLost; lost != "" {
		return "the writer lease was lost (" + lost + ")"
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := f.Sync(ctx); err != nil {
		return "the last commit failed (" + err.Error() + ")"
	}
	return ""
}

// maxPendingLines is how many uncommitted paths PendingWarning names.
const maxPendingLines = 50

// PendingWarning tells the operator which changed paths under the mount
// point dir an unmount now would drop (why: LastCommit's reason), and how
// to keep them.
func PendingWarning(dir, why string, pending []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "triad fs: not unmounting %s yet: %s, so these %d changed paths are not committed:\n", dir, why, len(pending))
	for _, p := range pending[:min(len(pending), maxPendingLines)] {
		fmt.Fprintf(&b, "  %s\n", filepath.Join(dir, p))
	}
	if len(pending) > maxPendingLines {
		fmt.Fprintf(&b, "  ... and %d more\n", len(pending)-maxPendingLines)
	}
	fmt.Fprintf(&b, "triad fs: they still read from %s: copy them out (or wait for the nodes and signal again: the unmount commits first), then send SIGINT again to unmount and drop what is left\n", dir)
	return b.String()
}
