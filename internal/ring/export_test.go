package ring

import (
	"slices"

	"triad/internal/node"
)

// Lost lists the peers h has declared dead and probes to merge rings.
func (h *Chord) Lost() []node.Addr { return slices.Clone(h.lost) }
