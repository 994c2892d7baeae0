package exp

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"triad/internal/d2/key"
	"triad/internal/d2/workload"
)

// smallD2 is a run small enough for a unit test: two days of 10 users on 100
// hosts after a day of warm-up, one trial.
func smallD2(t *testing.T, seed uint64) D2Result {
	t.Helper()
	m, err := workload.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg := D2Config{Seed: seed, Experiment: "all", manifest: m, sizes: &d2Sizes{
		LocalityUsers: 20, LocalityLength: 6 * time.Hour, Hosts: 100, Users: 10,
		Length: 48 * time.Hour, Warmup: 24 * time.Hour, Trials: 1}}
	res, err := RunD2(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestD2SmallRunMeetsThresholds: every threshold of issue 30 that the
// model measures holds on a small seeded run, and the checker finds the
// kept loads right.
func TestD2SmallRunMeetsThresholds(t *testing.T) {
	t.Parallel() // a simulation on one goroutine: go test runs two at once on two cores
	if testing.Short() {
		t.Skip("runs the simulator for a few seconds")
	}
	res := smallD2(t, 1)
	var text bytes.Buffer
	res.WriteText(&text)
	t.Log(text.String())
	if len(res.Checks) < 10 {
		t.Fatalf("%d checks; want the 10 of locality, avail, balance and violations", len(res.Checks))
	}
	for _, c := range res.Failed() {
		t.Errorf("%s = %.3f, want %s", c.Name, c.Value, c.Want)
	}
	if res.Moves+res.WarmupMoves == 0 || res.LBBytes == 0 || res.Tasks["d2"][0] == 0 {
		t.Fatalf("nothing happened: %d moves, %d bytes migrated, %v tasks", res.Moves+res.WarmupMoves, res.LBBytes, res.Tasks["d2"])
	}
	if res.ReplicaGroups["block"] < 5*res.ReplicaGroups["d2"] {
		t.Errorf("block tasks meet %.1f replica groups, d2's %.1f: want block's over 5 times", res.ReplicaGroups["block"], res.ReplicaGroups["d2"])
	}
}

// TestD2SameSeedSameRun: a run is a function of its seed.
func TestD2SameSeedSameRun(t *testing.T) {
	t.Parallel() // a simulation on one goroutine: go test runs two at once on two cores
	if testing.Short() {
		t.Skip("runs the simulator three times")
	}
	js := func(seed uint64) string {
		res := smallD2(t, seed)
		res.WallSeconds = 0
		b, err := json.Marshal(res)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	a, b, c := js(3), js(3), js(4)
	if a != b {
		t.Fatalf("seed 3 twice gave two runs:\n%s\n%s", a, b)
	}
	if a == c {
		t.Fatalf("seeds 3 and 4 gave the same run")
	}
}

// oneGroupConfig is a run where one host's range holds every block: all
// hosts sit below the volume's keys but one at the top of the ring.
func oneGroupConfig(t *testing.T) d2SimConfig {
	m, err := workload.Default()
	if err != nil {
		t.Fatal(err)
	}
	wc := workload.DefaultConfig()
	wc.Users, wc.Duration = 1, 12*time.Hour
	vol := workload.VolumeFor(wc.Seed, 0)
	const hosts = 8
	pos := make([]key.Key, hosts)
	for h := range hosts - 1 {
		pos[h] = key.Root(vol)
		pos[h][0]--          // below every key of the volume
		pos[h][63] = byte(h) // apart from each other
	}
	for i := range pos[hosts-1] {
		pos[hosts-1][i] = 0xff
	}
	if vol[0] == 0 {
		t.Fatal("seed 1's volume starts with a zero byte; pick another")
	}
	return d2SimConfig{Seed: 1, Hosts: hosts, Positions: pos, Replicas: 3, Placement: placeD2, Probe: d2Probe, T: d2T,
		PointerHold: d2PointerHold, MigrateBps: d2MigrateBps, Warmup: time.Hour, Workload: wc, Manifest: m, Inters: D2Inters}
}

// TestD2OneReplicaGroup: when every block is on one replica group, every
// task meets exactly one; a task fails exactly when that group is down.
func TestD2OneReplicaGroup(t *testing.T) {
	cfg := oneGroupConfig(t)
	res, err := runD2Sim(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cfg.Inters {
		if res.Tasks[i] == 0 || res.Groups[i] != 1 || res.Failed[i] != 0 {
			t.Fatalf("inter %v: %d tasks, %.3f groups each, %d failed; want 1 group, none failed", cfg.Inters[i], res.Tasks[i], res.Groups[i], res.Failed[i])
		}
	}
	if len(res.Violations) > 0 {
		t.Fatal(res.Violations)
	}
	// Take the group (the top host and the two after it, wrapping to the
	// lowest two) down for the whole trace: every task fails.
	cfg.Failures = &FailureTrace{Hosts: cfg.Hosts, Duration: cfg.Workload.Duration, Events: []FailureEvent{
		{At: 0, Host: 0, Kind: Down}, {At: 0, Host: 1, Kind: Down}, {At: 0, Host: cfg.Hosts - 1, Kind: Down}}}
	down, err := runD2Sim(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cfg.Inters {
		if down.Failed[i] != down.Tasks[i] || down.Tasks[i] != res.Tasks[i] {
			t.Fatalf("inter %v: %d of %d tasks failed with the group down; want all %d", cfg.Inters[i], down.Failed[i], down.Tasks[i], res.Tasks[i])
		}
	}
}

// TestSplitHalf: the mover takes the prefix that reaches half the bytes.
func TestSplitHalf(t *testing.T) {
	es := make([]d2Entry, 10)
	for i := range es {
		es[i].pos[0], es[i].bytes = byte(i), 100
	}
	pos, taken, ok := splitHalf(es)
	if !ok || pos[0] != 4 || taken != 500 {
		t.Fatalf("split at %d taking %d (ok %v); want 4 and 500", pos[0], taken, ok)
	}
	if _, _, ok := splitHalf(es[:1]); ok {
		t.Fatal("split one block")
	}
	if !shouldMove(100, 401*8192, 4) || shouldMove(8192, 4*8192, 4) || shouldMove(0, 8192, 4) {
		t.Fatal("shouldMove disagrees with t = 4")
	}
}

// TestBlockIndex checks put, remove and span against a plain sorted list.
func TestBlockIndex(t *testing.T) {
	x := newBlockIndex(nil)
	var want []int
	for i := range 2000 {
		v := (i * 7919) % 2003
		var k key.Key
		k[0], k[1] = byte(v>>8), byte(v)
		x.put(d2Entry{pos: k, bytes: int32(v)})
		want = append(want, v)
	}
	for i := 0; i < 2000; i += 3 {
		v := (i * 7919) % 2003
		var k key.Key
		k[0], k[1] = byte(v>>8), byte(v)
		if b, ok := x.remove(k); !ok || b != int32(v) {
			t.Fatalf("remove %d: %d %v", v, b, ok)
		}
	}
	var lo, hi key.Key
	lo[0], hi[0] = 3, 5 // (0x0300..., 0x0500...]
	n, sum := 0, 0
	x.span(lo, hi, func(e d2Entry) bool { n++; sum += int(e.bytes); return true })
	wn, wsum := 0, 0
	for i, v := range want {
		if i%3 != 0 && v > 0x300 && v <= 0x500 {
			wn++
			wsum += v
		}
	}
	if n != wn || sum != wsum || x.n != 2000-667 {
		t.Fatalf("span: %d entries, %d bytes; want %d, %d (index holds %d)", n, sum, wn, wsum, x.n)
	}
	all := 0
	x.span(hi, hi, func(d2Entry) bool { all++; return true })
	if all != x.n {
		t.Fatalf("a whole-ring span met %d of %d", all, x.n)
	}
}
