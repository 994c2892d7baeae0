package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// Options is what a table of the file sets: a command's Options, whose
// flags are the table's keys.
type Options interface {
	RegisterFlags(*flag.FlagSet)
	Validate() error
}

// PeerOptions are Options that take the file's [[nntp.peer]] tables too
// (a news site's, when set from the [nntp] table).
type PeerOptions interface {
	Options
	SetPeers([]Peer)
}

// Tables makes the Options of each table of the file, with their
// defaults: one entry per name of Sections.
type Tables map[string]func() Options

// ApplyOptions sets o from the table named section where the command line
// (fs's flags already set) has not: the table's keys through fs (Apply;
// only o's own flags are keys, not fs's others such as --config), and,
// for [nntp] Options that take them, the [[nntp.peer]] tables. A nil f
// sets nothing.
func (f *File) ApplyOptions(section string, fs *flag.FlagSet, o Options) error {
	if f == nil {
		return nil
	}
	own := flag.NewFlagSet(section, flag.ContinueOnError)
	o.RegisterFlags(own)
	var skip []string
	fs.VisitAll(func(fl *flag.Flag) {
		if own.Lookup(fl.Name) == nil {
			skip = append(skip, fl.Name)
		}
	})
	if err := f.Apply(section, fs, skip...); err != nil {
		return err
	}
	if site, ok := o.(PeerOptions); ok && section == "nntp" {
		site.SetPeers(f.Peers)
	}
	return nil
}

// Check checks every table of f (triad config check): each sets its
// command's Options, made by tables, which then validate. A problem two
// tables share (up's [nntp] is a site's too) is said once.
func (f *File) Check(tables Tables) error {
	var errs []error
	for _, section := range Sections {
		fs := flag.NewFlagSet(section, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o := tables[section]()
		o.RegisterFlags(fs)
		// The values the table could set are checked together too: a
		// key it could not is said once, by Apply.
		for _, err := range flatten(errors.Join(f.ApplyOptions(section, fs, o), f.Explain(section, o.Validate()))) {
			if !slices.ContainsFunc(errs, func(e error) bool { return e.Error() == err.Error() }) {
				errs = append(errs, err)
			}
		}
	}
	// In the file's order: a problem without a line (none of the file's
	// keys) last.
	slices.SortStableFunc(errs, func(a, b error) int { return lineOf(a) - lineOf(b) })
	return errors.Join(errs...)
}

// flatten lists the problems err joins (errors.Join), at any depth.
func flatten(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, flatten(e)...)
	}
	return out
}

// lineOf is the line a problem names, past every line if none.
func lineOf(err error) int {
	var le *lineError
	if errors.As(err, &le) {
		return le.line
	}
	return math.MaxInt32
}

// Summary says what f sets: the number of keys of each table and of
// peers, or "empty".
func (f *File) Summary() string {
	var parts []string
	for _, s := range Sections {
		if n := len(f.Settings(s)); n > 0 {
			parts = append(parts, fmt.Sprintf("[%s] %d keys", s, n))
		}
	}
	if len(f.Peers) > 0 {
		parts = append(parts, fmt.Sprintf("%d peers", len(f.Peers)))
	}
	if len(parts) == 0 {
		return "empty"
	}
	return strings.Join(parts, ", ")
}

// exampleHeader starts the example file.
const exampleHeader = `# triad configuration: a table per command, keys named like its flags.
# 'triad node --config FILE' reads [node], 'triad nntp --config FILE' reads
# [nntp] and its [[nntp.peer]] tables, 'triad up --config FILE' reads [up]
# (and the [nntp] keys that are not a site's own: listen, data, node,
# pathhost and peers are set by up). Flags on the command line win.
# Every key below is set to its default; delete what you do not change.
`

// peersExample ends the [nntp] table of the example file.
const peersExample = `
# Peers and feeds of a news site, one table each (a --peers FILE holds the
# same tables, named [[peer]]). mode: announce (send it headers and keys of
# what is listed here, take its announcements), mesh (announce, in a full
# mesh: only what entered the ring here), feed (a traditional server
# upstream, sent whole articles). secret: the same on both sides of a link;
# a feed may have none; "tls" makes the link mutual TLS (this site needs tls,
# the peer's addr is its peer-listen, and its certificate must be issued to
# its name). groups: a wildmat of the groups the peer is sent (default all).
# [[nntp.peer]]
# name = "site2"
# addr = "news2.example.net:119"
# mode = "mesh"
# secret = "the secret of this link"
# groups = "*"
`

// WriteExample writes a configuration file (triad config example) with
// every key of every table of tables set to its default, each under its
// help wrapped to 76 columns.
func WriteExample(w io.Writer, tables Tables) error {
	var b strings.Builder
	b.WriteString(exampleHeader)
	for _, section := range Sections {
		fs := flag.NewFlagSet(section, flag.ContinueOnError)
		tables[section]().RegisterFlags(fs)
		fmt.Fprintf(&b, "\n[%s]\n", section)
		fs.VisitAll(func(fl *flag.Flag) {
			_, help := flag.UnquoteUsage(fl)
			for _, line := range wrap(help, 76) {
				fmt.Fprintf(&b, "# %s\n", line)
			}
			fmt.Fprintf(&b, "%s = %s\n", fl.Name, tomlValue(fl))
		})
		if section == "nntp" {
			b.WriteString(peersExample)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// tomlValue is a flag's default written as a TOML value.
func tomlValue(fl *flag.Flag) string {
	if g, ok := fl.Value.(flag.Getter); ok {
		switch g.Get().(type) {
		case bool, int, int64, uint, uint64, float64:
			return fl.DefValue
		}
	}
	return fmt.Sprintf("%q", fl.DefValue)
}

// wrap breaks text into lines of at most width characters (a longer word
// is a line of its own).
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(text) {
		if line != "" && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
