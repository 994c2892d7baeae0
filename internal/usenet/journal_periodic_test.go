package usenet

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/vfs"
	"triad/internal/vfs/powercut"
)

// A site with SyncPeriod (triad site --sync-period) acknowledges a batch
// once its listing is written to the journal, and syncs the journal every
// period. A power cut loses the batches written since the last sync
// began, and nothing before: at each crash point (one before every sync),
// the journal replays every batch appended before the point before it.
// The test logs how long before its cut the oldest lost batch was
// appended.
func TestJournalPeriodicSyncPowerLoss(t *testing.T) {
	const period = 20 * time.Millisecond
	mem := vfs.NewMem()
	type point struct {
		appended int
		at       time.Time
	}
	var mu sync.Mutex
	var appendedAt []time.Time
	rec := powercut.New(func() point {
		mu.Lock()
		defer mu.Unlock()
		return point{len(appendedAt), time.Now()}
	})
	if err := vfs.MkdirAllSynced(mem, "/site"); err != nil {
		t.Fatal(err)
	}
	rec.Record(mem)
	j, _, err := openJournal(mem, "/site/journal")
	if err != nil {
		t.Fatal(err)
	}
	j.syncPeriodically(period)
	now := time.Now()
	for seq := uint64(1); seq <= 300; seq++ {
		e := Entry{MessageID: fmt.Sprintf("<%d@periodic.test>", seq), Key: id.Key([]byte{byte(seq), byte(seq >> 8)}),
			Groups: []string{"local.test"}, Arrived: now, Expires: now.Add(time.Hour), Subject: "s"}
		if err := j.append(seq, []Entry{e}, []bool{true}); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		appendedAt = append(appendedAt, time.Now())
		mu.Unlock()
		time.Sleep(time.Millisecond) // a steady stream over many periods
	}
	rec.Cut(mem)
	if err := j.close(); err != nil {
		t.Fatal(err)
	}

	points := rec.Points()
	if len(points) < 5 {
		t.Fatalf("only %d syncs, want several periods", len(points))
	}
	var window time.Duration
	lost := 0
	for i, cp := range points {
		re, batches, err := openJournal(cp.FS.CrashClone(), "/site/journal")
		if err != nil {
			t.Fatalf("crash point %d: %v", i, err)
		}
		re.close()
		safe := 0 // appended before the sync before this one began
		if i > 0 {
			safe = points[i-1].State.appended
		}
		if len(batches) < safe {
			t.Fatalf("crash point %d: %d batches replayed, but %d were appended before the last sync began", i, len(batches), safe)
		}
		for k, b := range batches {
			if b.seq != uint64(k+1) {
				t.Fatalf("crash point %d: batch %d replayed as seq %d", i, k+1, b.seq)
			}
		}
		if n := cp.State.appended - len(batches); n > 0 {
			lost += n
			window = max(window, cp.State.at.Sub(appendedAt[len(batches)]))
		}
	}
	t.Logf("journal synced every %v: %d crash points, %d batches, %d losses over all points; the oldest lost batch was appended %v before its cut", period, len(points), len(appendedAt), lost, window.Round(100*time.Microsecond))
	if lost == 0 {
		t.Error("no crash point lost a batch: the appends waited for their syncs")
	}
}

// A periodic sync that fails sticks: the next append is refused, and
// writes nothing, so that no batch is acknowledged over a journal whose
// earlier records may not be on the disk.
func TestJournalPeriodicSyncFailureSticks(t *testing.T) {
	mem := vfs.NewMem()
	if err := vfs.MkdirAllSynced(mem, "/site"); err != nil {
		t.Fatal(err)
	}
	var failing sync.Mutex // held: syncs fail
	broken := false
	fsys := vfs.Inject(mem, func(op vfs.Op, path string) error {
		failing.Lock()
		defer failing.Unlock()
		if op == vfs.OpSync && broken {
			return errors.New("injected: the disk is gone")
		}
		return nil
	})
	j, _, err := openJournal(fsys, "/site/journal")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	entry := func(seq uint64) []Entry {
		return []Entry{{MessageID: fmt.Sprintf("<%d@fail.test>", seq), Key: id.Key([]byte{byte(seq)}), Groups: []string{"local.test"}, Arrived: now, Expires: now.Add(time.Hour)}}
	}
	j.period = time.Hour // appends leave their sync to syncDirty, called here
	if err := j.append(1, entry(1), []bool{true}); err != nil {
		t.Fatal(err)
	}
	failing.Lock()
	broken = true
	failing.Unlock()
	j.syncDirty()
	before, err := mem.Stat("/site/journal")
	if err != nil {
		t.Fatal(err)
	}
	size := before.Size()
	if err := j.append(2, entry(2), []bool{true}); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("an append after a failed sync: %v, want the sync's error", err)
	}
	if st, err := mem.Stat("/site/journal"); err != nil || st.Size() != size {
		t.Errorf("the journal holds %d bytes after the refused append, want %d (nothing written): %v", st.Size(), size, err)
	}
}
