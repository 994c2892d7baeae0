package tapestry

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"triad/internal/wire"
)

// WriteTable writes a node's routing table (a TapTable, as TapGetTable
// answers) for people: an entry per line, primary then backups with their
// round trips, and the backpointers.
func WriteTable(w io.Writer, t *wire.TapTable) error {
	fmt.Fprintf(w, "tapestry table of %s (%s): %d entries\n", t.Self.Addr, t.Self.ID, len(t.Entries))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "level\tdigit\tprimary\tbackups")
	for _, e := range t.Entries {
		links := make([]string, len(e.Links))
		for i, l := range e.Links {
			links[i] = fmt.Sprintf("%s %s (%.2f ms)", l.ID.Short(), l.Addr, linkRTTMillis(e, i))
		}
		var primary, backups string
		if len(links) > 0 {
			primary, backups = links[0], strings.Join(links[1:], ", ")
		}
		fmt.Fprintf(tw, "%d\t%x\t%s\t%s\n", e.Level, e.Digit, primary, backups)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "backpointers (%d):\n", len(t.Backpointers))
	for _, b := range t.Backpointers {
		fmt.Fprintf(w, "  %s %s\n", b.ID.Short(), b.Addr)
	}
	return nil
}

// TableJSON is the table as JSON values: self, id, joined, entries (level,
// digit, links with addr, id, rtt_ms and backup) and backpointers.
func TableJSON(t *wire.TapTable) map[string]any {
	type link struct {
		Addr   string  `json:"addr"`
		ID     string  `json:"id"`
		RTTMS  float64 `json:"rtt_ms"`
		Backup bool    `json:"backup"`
	}
	type entry struct {
		Level int    `json:"level"`
		Digit int    `json:"digit"`
		Links []link `json:"links"`
	}
	var entries []entry
	for _, e := range t.Entries {
		en := entry{Level: int(e.Level), Digit: int(e.Digit)}
		for i, l := range e.Links {
			en.Links = append(en.Links, link{Addr: l.Addr, ID: l.ID.String(), RTTMS: linkRTTMillis(e, i), Backup: i > 0})
		}
		entries = append(entries, en)
	}
	back := make([]string, len(t.Backpointers))
	for i, b := range t.Backpointers {
		back[i] = b.Addr
	}
	return map[string]any{"self": t.Self.Addr, "id": t.Self.ID.String(), "joined": t.Joined, "entries": entries, "backpointers": back}
}

// linkRTTMillis is link i's round trip in milliseconds (0: not measured).
func linkRTTMillis(e wire.TapEntry, i int) float64 {
	if i >= len(e.RTTMicros) {
		return 0
	}
	return float64(e.RTTMicros[i]) / 1000
}
