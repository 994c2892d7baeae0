package fsadmin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"triad/internal/d2/key"
	"triad/internal/d2client"
	"triad/internal/d2fs"
)

// Lister lists a volume's stored keys, from owner to owner
// (d2client.Blocks.List).
type Lister interface {
	List(ctx context.Context, prefix []byte, fn func(key.Key) error) error
}

// OrphanReport is what Orphans found and did.
type OrphanReport struct {
	Found   int     // stored keys no part of the newest commit points at
	Kept    int     // of those, the commit before the newest's (for readers)
	Deleted int     // deleted
	Failed  []error // deletes that failed, each naming its key
}

// Orphans lists volume vol's keys and counts those reachable does not
// hold (fsck --orphans); with del, it deletes those not of commit gen-1,
// which a read-only mount may still be reading. Deleting needs the
// volume's key in b and the writer's lease.
func Orphans(ctx context.Context, b interface {
	Lister
	d2fs.Blocks
}, vol key.Volume, gen uint32, reachable map[key.Key]bool, del bool) (OrphanReport, error) {
	var r OrphanReport
	err := b.List(ctx, vol[:], func(k key.Key) error {
		if reachable[k] {
			return nil
		}
		r.Found++
		switch {
		case !del:
		case k.Version() == gen-1:
			r.Kept++
		default:
			if err := b.Delete(ctx, k); err != nil {
				r.Failed = append(r.Failed, fmt.Errorf("%v: %w", k, err))
			} else {
				r.Deleted++
			}
		}
		return nil
	})
	return r, err
}

// holderWorkers bounds the blocks whose holders HolderLines asks at once.
const holderWorkers = 16

// HolderLines asks the nodes which hold each block, holderWorkers blocks
// at a time, and returns a line per block in refs' order: its key and its
// holders (the owner first, each ok or missing), or why they are
// unknown; failed counts the latter.
func HolderLines(ctx context.Context, b *d2client.Blocks, refs []d2fs.BlockRef) (lines []string, failed int) {
	lines = make([]string, len(refs))
	errs := make([]error, len(refs))
	sem := make(chan struct{}, holderWorkers)
	var wg sync.WaitGroup
	for i, r := range refs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			hs, err := b.Holders(ctx, r.Key, r.Sum)
			if err != nil {
				lines[i], errs[i] = fmt.Sprintf("%v  holders unknown: %v", r.Key, err), err
				return
			}
			parts := make([]string, len(hs))
			for j, h := range hs {
				parts[j] = fmt.Sprintf("%s %v", h.Node.Node.Addr, h.State)
			}
			lines[i] = fmt.Sprintf("%v  %s", r.Key, strings.Join(parts, ", "))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			failed++
		}
	}
	return lines, failed
}

// Err is nil, or, if some deletes failed, their count and the first
// few.
func (r OrphanReport) Err() error {
	if len(r.Failed) == 0 {
		return nil
	}
	return errors.Join(append([]error{fmt.Errorf("%d orphaned blocks not deleted", len(r.Failed))}, r.Failed[:min(len(r.Failed), 5)]...)...)
}
