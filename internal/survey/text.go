package survey

import (
	"fmt"
	"strings"
	"time"
)

// The texts a node's state is shown as, the same in triad status's table
// and on the deployment page; "-" for what the node does not say or run.

// VersionText is the build the node runs.
func (n Node) VersionText() string {
	if n.Version == "" {
		return "-"
	}
	return n.Version
}

// UptimeText is how long the node has run.
func (n Node) UptimeText() string {
	if n.UptimeS <= 0 {
		return "-"
	}
	return seconds(n.UptimeS).String()
}

// DiskText is the data disk's free bytes of its total.
func (n Node) DiskText() string {
	if n.DiskTotal == 0 {
		return "-"
	}
	return Bytes(n.DiskFree) + " of " + Bytes(n.DiskTotal)
}

// MaintText is the node's maintenance: paused, or its last round.
func (n Node) MaintText() string {
	m := n.Maint
	switch {
	case m == nil:
		return "-"
	case m.Paused:
		return "paused"
	case m.LastRoundAgo < 0:
		return "no round yet"
	}
	s := fmt.Sprintf("last round %s ago", seconds(m.LastRoundAgo))
	if m.Queued > 0 {
		s += fmt.Sprintf(", %d queued", m.Queued)
	}
	return s
}

// D2Text is the node's D2: on its ring or not, its store, its primary
// load (of the keys it holds), whom it distrusts.
func (n Node) D2Text() string {
	d := n.D2
	if d == nil {
		return "-"
	}
	state := "joined"
	if !d.Joined {
		state = "NOT JOINED"
	}
	s := fmt.Sprintf("%s, %s used", state, Bytes(d.Usage))
	if d.Capacity > 0 {
		s += " of " + Bytes(d.Capacity)
	}
	s += fmt.Sprintf(", primary for %d of %d keys", d.Primary, d.Held)
	if len(d.Distrusted) > 0 {
		s += ", distrusts " + strings.Join(d.Distrusted, " ")
	}
	return s
}

// TapestryText is the node's Tapestry: joined and its links, or not.
func (n Node) TapestryText() string {
	switch t := n.Tapestry; {
	case t == nil:
		return "-"
	case !t.Joined:
		return "NOT JOINED"
	default:
		return fmt.Sprintf("joined, %d links", t.Links)
	}
}

// Bytes is n in B, KiB, MiB or GiB.
func Bytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func seconds(s float64) time.Duration {
	return time.Duration(s * float64(time.Second)).Round(time.Second)
}
