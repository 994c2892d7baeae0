package exp

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The synthetic trace has the paper's counts exactly, its average online
// hosts within one, its worst burst of disk failures, and survives a round
// trip through the file format.
func TestSyntheticTraceMatchesPlanetLab(t *testing.T) {
	want := PlanetLabShape()
	for seed := uint64(1); seed <= 3; seed++ {
		tr, err := SyntheticTrace(want, seed)
		if err != nil {
			t.Fatal(err)
		}
		s := tr.Stats()
		if s.Hosts != want.Hosts || s.TransientFailures != want.Transient || s.DiskFailures != want.Disk ||
			s.HostsNoDisk != want.HostsNoDisk || s.HostsNoFailure != want.HostsNoFail || s.MaxDiskIn8h != want.Burst ||
			s.AvgOnline < want.AvgOnline-1 || s.AvgOnline > want.AvgOnline+1 || s.Days != 365 {
			t.Fatalf("seed %d: %+v", seed, s)
		}
		var buf bytes.Buffer
		if _, err := tr.WriteTo(&buf); err != nil {
			t.Fatal(err)
		}
		back, err := ParseFailureTrace(&buf)
		if err != nil {
			t.Fatal(err)
		}
		if back.Stats() != s || len(back.Events) != len(tr.Events) {
			t.Fatalf("seed %d: read back %+v", seed, back.Stats())
		}
	}
}

func TestParseFailureTraceRefusesBadTraces(t *testing.T) {
	for _, tc := range []struct{ name, text, err string }{
		{"no header", "10 1 down\n", "before the hosts"},
		{"unknown event", "hosts 4\nduration 100\n10 1 crash\n", "line 3"},
		{"out of order", "hosts 4\nduration 100\n10 1 down\n5 2 down\n", "out of time order"},
		{"up while up", "hosts 4\nduration 100\n10 1 up\n", "already up"},
		{"down twice", "hosts 4\nduration 100\n10 1 down\n20 1 disk\n", "already down"},
		{"host out of range", "hosts 4\nduration 100\n10 4 down\n", "out of range"},
		{"past the end", "hosts 4\nduration 100\n101 1 down\n", "out of range"},
		{"empty", "# nothing\n", "no hosts"},
	} {
		_, err := ParseFailureTrace(strings.NewReader(tc.text))
		if err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.err)
		}
	}
	tr, err := ParseFailureTrace(strings.NewReader("# a comment\nhosts 3\nduration 3600\n60 2 disk  # gone\n600 2 up\n"))
	if err != nil || len(tr.Events) != 2 || tr.Events[0] != (FailureEvent{At: time.Minute, Host: 2, Kind: Disk}) {
		t.Fatalf("%v %+v", err, tr)
	}
}

// TestTraceRunKeepsEveryObjectOnlyWithMaintenance: 20 of 30 hosts lose
// their disks one an hour apart. With Passing Tone running, every object
// is made again in time and none is lost, and no copy of an object
// appears after it expired (a fifth expire during the run); with no
// maintenance the same
// trace loses objects (so the experiment's count can fail).
func TestTraceRunKeepsEveryObjectOnlyWithMaintenance(t *testing.T) {
	var b strings.Builder
	fmt.Fprintf(&b, "hosts 30\nduration %d\n", 2*24*3600)
	for i := range 20 {
		at := (i + 1) * 3600
		fmt.Fprintf(&b, "%d %d disk\n%d %d up\n", at, i, at+600, i)
	}
	tr, err := ParseFailureTrace(strings.NewReader(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	run := func(noMaint bool) TraceResult {
		res, err := RunTrace(TraceConfig{Seed: 2, Trace: tr, Objects: 2000, ObjectBytes: 1 << 20, noMaint: noMaint})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	with := run(false)
	t.Logf("with maintenance: %d lost, CDF %v, %d repaired, %.1f repairs per disk failure, %d expired (%d not repaired), %.1f s",
		with.ObjectsLost, with.ReplicaCDF, with.ObjectsRepaired, with.RepairsPerDisk, with.ObjectsExpired, with.ExpiredNotRepaired, with.WallSeconds)
	if with.ObjectsLost != 0 || with.MinReplicas < 2 || with.ExpiredRepairs != 0 || with.ObjectsRepaired == 0 || with.ObjectsExpired != 2000/expiringEvery {
		t.Fatalf("with maintenance: %+v", with)
	}
	without := run(true)
	t.Logf("without: %d lost", without.ObjectsLost)
	if without.ObjectsLost == 0 {
		t.Fatalf("no object lost without maintenance: the trace does not test anything")
	}
}
