package figure

import (
	"fmt"

	"triad/internal/exp"
)

// Draw draws the figure of an experiment's result to path: the one figure
// of each result type an experiment hands to exp.Output's Plot.
func Draw(result any, path string) error {
	switch r := result.(type) {
	case exp.RingResult:
		return RingHops(r, path)
	case exp.DHashResult:
		return DHashLatency(r, path)
	case exp.TraceResult:
		return ReplicaCDF(r, path)
	case []exp.ScenarioResult:
		return Scenarios(r, path)
	case exp.Congestion:
		return Congestion(r, path)
	case exp.TapestryResult:
		return Tapestry(r, path)
	case exp.D2Result:
		return D2(r, path)
	}
	return fmt.Errorf("figure: no figure of a %T", result)
}
