package exp

import (
	"fmt"
	"os"
	"slices"
	"time"

	"triad/internal/d2/workload"
)

// d2Run names one simulation of the avail and balance experiments.
type d2Run struct {
	name      string
	placement d2Placement
	balance   bool
	pointers  bool
}

var (
	d2AvailRuns = []d2Run{{"d2", placeD2, true, true}, {"block", placeBlock, false, false}, {"file", placeFile, false, false}}
	// d2MercRun runs in every trial for the balance experiment, and
	// d2NoPointersRun in the first only.
	d2MercRun       = d2Run{"block+balancing", placeBlock, true, true}
	d2NoPointersRun = d2Run{"d2-no-pointers", placeD2, true, false}
)

// failures is the run's failure trace and where it came from.
func (c D2Config) failures(sz d2Sizes) (*FailureTrace, string, error) {
	if c.TraceFile == "" {
		return syntheticWeek(defaultD2WeekShape(sz.Hosts, sz.Length), c.Seed),
			fmt.Sprintf("synthetic: %d hosts over %v, independent and correlated failures", sz.Hosts, sz.Length), nil
	}
	f, err := os.Open(c.TraceFile)
	if err != nil {
		return nil, "", err
	}
	defer f.Close()
	t, err := ParseFailureTrace(f)
	if err != nil {
		return nil, "", fmt.Errorf("--trace %s: %w", c.TraceFile, err)
	}
	return t, c.TraceFile, nil
}

// availBalance runs the simulator: every trial of d2, block and file for
// Fig. 6 and Table 2, and the first trial's runs and two more for Fig. 11
// and the overhead.
func (r *D2Result) availBalance(cfg D2Config, m *workload.Manifest) error {
	sz := cfg.size()
	trace, source, err := cfg.failures(sz)
	if err != nil {
		return err
	}
	r.Hosts, r.Users, r.TraceSource = trace.Hosts, sz.Users, source
	trials := sz.Trials
	if !cfg.runs("avail") {
		trials = 1
	}
	r.Trials = trials
	base := d2SimConfig{Hosts: trace.Hosts, Replicas: d2Replicas, Probe: d2Probe, T: d2T, PointerHold: d2PointerHold,
		MigrateBps: d2MigrateBps, Warmup: sz.Warmup, Manifest: m, Failures: trace, Inters: D2Inters}
	volume := m.Counts().Bytes
	base.Background = max(0, int(int64(trace.Hosts)*d2HostBytes/max(volume, 1))-sz.Users)
	base.BackgroundBytes = volume
	r.BackgroundVolumes = base.Background
	base.Workload = workload.DefaultConfig()
	base.Workload.Seed, base.Workload.Users, base.Workload.Duration = cfg.Seed, sz.Users, sz.Length
	base.Workload.WriteBitsPerSec = d2WriteBps
	sums := map[string]*d2SimResult{}
	for trial := range trials {
		runs := d2AvailRuns
		if cfg.runs("balance") {
			runs = append(slices.Clone(runs), d2MercRun)
			if trial == 0 {
				runs = append(runs, d2NoPointersRun)
			}
		}
		for _, run := range runs {
			sc := base
			sc.Seed = cfg.Seed*1000 + uint64(trial)
			sc.Placement, sc.Balance, sc.Pointers = run.placement, run.balance, run.pointers
			t0 := time.Now()
			got, err := runD2Sim(sc)
			if err != nil {
				return err
			}
			logf(cfg.Log, "sim d2: trial %d, %s: %d tasks (inter 10 s), %d failed, %d moves, %.0fs of wall time",
				trial+1, run.name, got.Tasks[1], got.Failed[1], got.Moves, time.Since(t0).Seconds())
			r.Violations += len(got.Violations)
			for _, v := range got.Violations {
				if len(r.Violated) < 20 {
					r.Violated = append(r.Violated, run.name+": "+v)
				}
			}
			if trial == 0 {
				r.noteOverhead(run.name, got)
			}
			sums[run.name] = addSim(sums[run.name], got)
		}
	}
	if cfg.runs("avail") {
		r.noteAvail(sums)
	}
	if cfg.runs("balance") {
		r.noteBalance(sums)
	}
	return nil
}

// addSim adds b's task counts to a (nil: a fresh sum); Groups is summed
// weighted by tasks and divided in noteAvail.
func addSim(a *d2SimResult, b d2SimResult) *d2SimResult {
	if a == nil {
		a = &d2SimResult{Tasks: make([]int, len(b.Tasks)), Failed: make([]int, len(b.Tasks)), Groups: make([]float64, len(b.Tasks))}
	}
	a.Hourly = append(a.Hourly, b.Hourly...)
	a.Ratios = append(a.Ratios, b.Ratios...)
	for i := range b.Tasks {
		a.Tasks[i] += b.Tasks[i]
		a.Failed[i] += b.Failed[i]
		a.Groups[i] += b.Groups[i] * float64(b.Tasks[i])
	}
	return a
}

func (r *D2Result) noteAvail(sums map[string]*d2SimResult) {
	r.Unavail, r.Tasks, r.TasksFailed = map[string][]float64{}, map[string][]int{}, map[string][]int{}
	r.GroupsPerTask, r.ReplicaGroups = map[string][]float64{}, map[string]float64{}
	for _, d := range D2Inters {
		r.InterSeconds = append(r.InterSeconds, d.Seconds())
	}
	for _, run := range d2AvailRuns {
		s := sums[run.name]
		r.Tasks[run.name], r.TasksFailed[run.name] = s.Tasks, s.Failed
		for i := range s.Tasks {
			u, g := 0.0, 0.0
			if s.Tasks[i] > 0 {
				u, g = float64(s.Failed[i])/float64(s.Tasks[i]), s.Groups[i]/float64(s.Tasks[i])
			}
			r.Unavail[run.name] = append(r.Unavail[run.name], u)
			r.GroupsPerTask[run.name] = append(r.GroupsPerTask[run.name], g)
			r.ReplicaGroups[run.name] = max(r.ReplicaGroups[run.name], g)
		}
	}
	d2, block := sums["d2"], sums["block"]
	for i := range D2Inters {
		r.UnavailRatio = append(r.UnavailRatio, ratioFloor(block.Failed[i], block.Tasks[i], d2.Failed[i], d2.Tasks[i]))
	}
	r.UnavailRatioMin = slices.Min(r.UnavailRatio)
	r.check("unavail_ratio_min", r.UnavailRatioMin, ">= 10", r.UnavailRatioMin >= 10)
	r.check("replica_groups_per_task.d2", r.ReplicaGroups["d2"], "<= 4", r.ReplicaGroups["d2"] <= 4)
}

// noteOverhead keeps the first trial's bytes migrated and written.
func (r *D2Result) noteOverhead(name string, s d2SimResult) {
	switch name {
	case d2NoPointersRun.name:
		r.LBBytesNoPointers = s.WarmupMigrated + s.Migrated
	case "d2":
		r.Moves, r.WarmupMoves = s.Moves, s.WarmupMoves
		r.LBBytes, r.LBBytesAfterWarmup, r.WrittenBytes, r.InitialBytes = s.WarmupMigrated+s.Migrated, s.Migrated, s.Written, s.Initial
		if s.Written > 0 {
			r.LBOverWritten = float64(s.Migrated) / float64(s.Written)
		}
		r.LBOverWrittenWithInitial = float64(r.LBBytes) / float64(max(s.Written+s.Initial, 1))
	}
}

// noteBalance sums the hourly samples of every trial up and checks them.
func (r *D2Result) noteBalance(sums map[string]*d2SimResult) {
	r.Imbalance, r.ImbalanceHourly = map[string]float64{}, map[string][]float64{}
	for _, run := range append(slices.Clone(d2AvailRuns), d2MercRun) {
		r.Imbalance[run.name] = mean(sums[run.name].Hourly)
		r.ImbalanceHourly[run.name] = hourlyMean(sums[run.name].Hourly, r.Trials)
	}
	r.MaxMinPrimaryP95 = finite(percentile(sums["d2"].Ratios, 0.95))
	d2, block, merc := r.Imbalance["d2"], r.Imbalance["block"], r.Imbalance["block+balancing"]
	r.check("imbalance.d2/block", d2/block, "<= 1", d2 <= block)
	r.check("imbalance.d2/block+balancing", d2/merc, "<= 1.25", d2 <= 1.25*merc)
	r.check("max_min_primary_p95", r.MaxMinPrimaryP95, "<= 4", r.MaxMinPrimaryP95 <= 4)
	r.check("lb_over_written", r.LBOverWritten, "<= 0.6", r.LBOverWritten <= 0.6)
	r.check("lb_bytes/lb_bytes_no_pointers", float64(r.LBBytes)/float64(max(r.LBBytesNoPointers, 1)), "<= 1", r.LBBytes <= r.LBBytesNoPointers)
}
