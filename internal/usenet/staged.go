package usenet

import (
	"cmp"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// Staged listings. A site acknowledges an article once its listing is
// durable in the site's journal (journal.go); news.db takes it later, in a
// checkpoint that writes every batch staged meanwhile in one transaction.
// Between the two the list serves the article from memory: its numbers
// are taken, its group's counts include it, and Group, Overview,
// Numbered, Neighbour, Lookup and Has all see it. A crash before the
// checkpoint loses only the memory; opening the site replays the journal.

// A stagedBatch is a batch listed in memory and not yet in news.db, with
// the last journal batch it covers.
type stagedBatch struct {
	entries []listedEntry
	seq     uint64
}

// staging is the list's memory of what it staged and has not
// checkpointed, under List.mu.
type staging struct {
	batches []*stagedBatch
	entries int
	bytes   int                             // what the entries hold, about (stagedSize)
	ov      map[string]map[uint64]*Overview // by group, by number
	hist    map[string]HistEntry            // by message-id
}

// stage numbers a batch of entries in their groups and lists them in
// memory, with the last journal batch it covers (seq). Entries that name
// no group carried here are left out. Staging cannot fail: Checkpoint
// writes the batch to news.db later.
func (l *List) stage(batch []Entry, seq uint64) {
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	todo, changed := l.carried(batch)
	sb := &stagedBatch{seq: seq, entries: make([]listedEntry, 0, len(todo))}
	for _, n := range todo {
		sb.entries = append(sb.entries, l.number(n, changed))
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	st := &l.staged
	if st.ov == nil {
		st.ov, st.hist = map[string]map[uint64]*Overview{}, map[string]HistEntry{}
	}
	for name, g := range changed {
		l.groups[name] = g
	}
	for _, le := range sb.entries {
		for i, name := range le.groups {
			if st.ov[name] == nil {
				st.ov[name] = map[uint64]*Overview{}
			}
			st.ov[name][le.ovs[i].Num] = le.ovs[i]
		}
		st.hist[le.e.MessageID] = le.hist
		l.seen.add(le.e.MessageID)
		st.bytes += stagedSize(le)
	}
	st.batches = append(st.batches, sb)
	st.entries += len(sb.entries)
}

// stagedSize is about what a staged entry holds in memory: its head (a
// relaying site's, up to 64 KB), its overview fields once per group, and
// a fixed cost for the rest.
func stagedSize(le listedEntry) int {
	e := le.e
	fields := len(e.Subject) + len(e.From) + len(e.Date) + len(e.References) + len(e.MessageID) + len(le.hist.Xref)
	return len(e.Head) + len(e.State) + (len(le.groups)+1)*(fields+256)
}

// stagedEntries is how many entries are listed in memory only, and about
// how many bytes they hold.
func (l *List) stagedEntries() (entries, bytes int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.staged.entries, l.staged.bytes
}

// checkpoint writes every staged batch to news.db in one transaction,
// with the groups' current state and the last journal batch covered, and
// then lets go of their memory. It returns the journal batch news.db now
// covers (0 if nothing was staged). A failed checkpoint keeps them staged
// for the next.
func (l *List) checkpoint() (seq uint64, n int, err error) {
	l.commitMu.Lock()
	defer l.commitMu.Unlock()
	l.mu.Lock()
	batches := l.staged.batches
	// The groups as they are now: numbers only grow, so a state that
	// counts a later staged batch too leaves a gap after a crash at
	// worst, never a number used twice.
	groups := map[string]*Group{}
	for _, sb := range batches {
		for _, le := range sb.entries {
			for _, name := range le.groups {
				if g := l.groups[name]; g != nil && groups[name] == nil {
					c := *g
					groups[name] = &c
				}
			}
		}
	}
	l.mu.Unlock()
	if len(batches) == 0 {
		return 0, 0, nil
	}
	for _, sb := range batches {
		seq = max(seq, sb.seq)
		n += len(sb.entries)
	}
	err = l.db.b.Update(func(tx *bolt.Tx) error {
		for _, sb := range batches {
			for _, le := range sb.entries {
				if err := l.write(tx, le); err != nil {
					return err
				}
			}
		}
		return l.endTx(tx, seq, groups)
	})
	if err != nil {
		return 0, 0, fmt.Errorf("usenet: checkpoint of the listing: %w", err)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	st := &l.staged
	for _, sb := range batches {
		for _, le := range sb.entries {
			for i, name := range le.groups {
				delete(st.ov[name], le.ovs[i].Num)
			}
			delete(st.hist, le.e.MessageID)
			st.bytes -= stagedSize(le)
		}
	}
	st.batches = slices.Delete(st.batches, 0, len(batches))
	st.entries -= n
	return seq, n, nil
}

// stagedHistory is a staged message-id's history entry.
func (l *List) stagedHistory(msgid string) (HistEntry, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	h, ok := l.staged.hist[msgid]
	return h, ok
}

// stagedEntry returns a copy of a group's staged entry num, or nil.
func (l *List) stagedEntry(group string, num uint64) *Overview {
	l.mu.Lock()
	defer l.mu.Unlock()
	o := l.staged.ov[group][num]
	if o == nil {
		return nil
	}
	c := *o
	return &c
}

// stagedOverview returns copies of a group's staged entries numbered
// lo..hi, by number.
func (l *List) stagedOverview(group string, lo, hi uint64) []*Overview {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []*Overview
	for num, o := range l.staged.ov[group] {
		if num >= lo && num <= hi {
			c := *o
			out = append(out, &c)
		}
	}
	slices.SortFunc(out, func(a, b *Overview) int { return cmp.Compare(a.Num, b.Num) })
	return out
}

// mergeOverview merges a group's staged entries (read first) with
// news.db's (read after): a checkpoint between the two reads puts an entry
// in both, never in neither. The result is by number, at most max.
func mergeOverview(staged, stored []*Overview, max int) []*Overview {
	if len(staged) == 0 {
		return stored
	}
	out := make([]*Overview, 0, len(stored)+len(staged))
	i, j := 0, 0
	for len(out) < max && (i < len(stored) || j < len(staged)) {
		switch {
		case j == len(staged) || i < len(stored) && stored[i].Num < staged[j].Num:
			out = append(out, stored[i])
			i++
		case i == len(stored) || staged[j].Num < stored[i].Num:
			out = append(out, staged[j])
			j++
		default: // in both
			out = append(out, stored[i])
			i, j = i+1, j+1
		}
	}
	return out
}

// stagedNeighbour is the staged number nearest num in a group after it
// (next) or before it, or 0.
func (l *List) stagedNeighbour(group string, num uint64, next bool) uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var best uint64
	for n := range l.staged.ov[group] {
		switch {
		case next && n > num && (best == 0 || n < best):
			best = n
		case !next && n < num && n > best:
			best = n
		}
	}
	return best
}
