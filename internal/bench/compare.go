package bench

import (
	"fmt"
	"io"
	"os"
	"slices"
)

// Variants of the block-store benchmark that CompareDHash sets against a
// base run.
const (
	// VariantTLS runs with mutual TLS against plain TCP: what TLS costs.
	VariantTLS = "tls"
	// VariantSTP runs with STP's window against every copy at once: what
	// STP gains.
	VariantSTP = "stp"
)

// DHashComparison is a base and a variant of the block-store benchmark,
// run in turns, and the ratio of their medians.
type DHashComparison struct {
	Variant string // VariantTLS or VariantSTP
	Rounds  int    // runs of each way
	// Base and With are the runs without and with the variant, in order.
	Base, With []DHashResult
}

// CompareDHash runs cfg rounds times each way, without and with the
// variant, in turns (ABBA...: drift in the disk or the machine falls on
// both), and calls each with every run as it ends.
func CompareDHash(cfg DHashConfig, variant string, rounds int, each func(DHashResult)) (DHashComparison, error) {
	c := DHashComparison{Variant: variant, Rounds: rounds}
	for r := range rounds {
		for _, on := range []bool{r%2 == 1, r%2 == 0} {
			if variant == VariantTLS {
				cfg.TLS = on
			} else {
				cfg.FixedWindow = !on
			}
			res, err := DHash(cfg)
			if err != nil {
				return c, err
			}
			each(res)
			if on {
				c.With = append(c.With, res)
			} else {
				c.Base = append(c.Base, res)
			}
		}
	}
	return c, nil
}

// phases are the benchmark's two phases, by name.
var phases = []struct {
	name  string
	phase func(DHashResult) PhaseResult
}{{"put", func(r DHashResult) PhaseResult { return r.Put }}, {"get", func(r DHashResult) PhaseResult { return r.Get }}}

// WriteText writes, per phase, what the variant changes in MB/s, or that
// there is no figure.
func (c DHashComparison) WriteText(w io.Writer) {
	for _, p := range phases {
		bm, bok := medianMBps(c.Base, p.phase)
		vm, vok := medianMBps(c.With, p.phase)
		switch {
		case !bok || !vok || bm == 0:
			fmt.Fprintf(w, "%s %s: no figure (a phase had failures)\n", c.Variant, p.name)
		case c.Variant == VariantTLS:
			fmt.Fprintf(w, "TLS cost, %s: %.1f%% of MB/s (medians of %d rounds: %.2f plain, %.2f with TLS)\n", p.name, 100*(1-vm/bm), c.Rounds, bm, vm)
		default:
			fmt.Fprintf(w, "STP against every copy at once, %s: %+.1f%% of MB/s (medians of %d rounds: %.2f at once, %.2f with STP)\n", p.name, 100*(vm/bm-1), c.Rounds, bm, vm)
		}
	}
}

// JSON is the comparison's --json line: the rounds, the runs of each way
// (plain and tls, or fixed and stp) and tls_cost_PHASE or stp_gain_PHASE
// where both ways had no failures.
func (c DHashComparison) JSON() map[string]any {
	base := "plain"
	if c.Variant == VariantSTP {
		base = "fixed"
	}
	out := map[string]any{"rounds": c.Rounds, base: c.Base, c.Variant: c.With}
	for _, p := range phases {
		bm, bok := medianMBps(c.Base, p.phase)
		vm, vok := medianMBps(c.With, p.phase)
		switch {
		case !bok || !vok || bm == 0:
		case c.Variant == VariantTLS:
			out["tls_cost_"+p.name] = 1 - vm/bm
		default:
			out["stp_gain_"+p.name] = vm/bm - 1
		}
	}
	return out
}

// medianMBps is the median MB/s of one phase over runs; false if a run of
// it had failures.
func medianMBps(runs []DHashResult, phase func(DHashResult) PhaseResult) (float64, bool) {
	var v []float64
	for _, r := range runs {
		ph := phase(r)
		if ph.Failed > 0 {
			return 0, false
		}
		v = append(v, ph.MBps)
	}
	slices.Sort(v)
	if len(v) == 0 {
		return 0, false
	}
	if len(v)%2 == 1 {
		return v[len(v)/2], true
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2, true
}

// ScratchDir makes a new folder for a benchmark's files under dir (made
// if missing); the caller removes it.
func ScratchDir(dir, prefix string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return os.MkdirTemp(dir, prefix)
}
