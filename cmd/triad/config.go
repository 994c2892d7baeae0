package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"triad/internal/config"
	"triad/internal/localdeploy"
	"triad/internal/newsd"
	"triad/internal/noded"
)

var configAbout = help("config")

// options is what a table of the file sets: a command's Options.
type options interface {
	RegisterFlags(*flag.FlagSet)
	Validate() error
}

// configTables makes the options of each table of the file, with their
// defaults.
var configTables = map[string]func() options{
	"node": func() options { o := noded.DefaultOptions(); return &o },
	"nntp": func() options { o := newsd.DefaultOptions(); return &o },
	"up":   func() options { o := localdeploy.DefaultOptions(); return &o },
}

func runConfig(args []string, stdout, stderr io.Writer) error {
	return runGroup("config", configAbout, map[string]func([]string, io.Writer, io.Writer) error{
		"example": runConfigExample,
		"check":   runConfigCheck,
	}, args, stdout, stderr)
}

func runConfigExample(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("config example", "config example", "Prints a configuration file with every key set to its default, each with its help.", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	fmt.Fprintln(stdout, `# triad configuration: a table per command, keys named like its flags.
# 'triad node --config FILE' reads [node], 'triad nntp --config FILE' reads
# [nntp] and its [[nntp.peer]] tables, 'triad up --config FILE' reads [up]
# (and the [nntp] keys that are not a site's own: listen, data, node,
# pathhost and peers are set by up). Flags on the command line win.
# Every key below is set to its default; delete what you do not change.`)
	for _, table := range config.Sections {
		fs := flag.NewFlagSet(table, flag.ContinueOnError)
		configTables[table]().RegisterFlags(fs)
		fmt.Fprintf(stdout, "\n[%s]\n", table)
		fs.VisitAll(func(fl *flag.Flag) {
			_, help := flag.UnquoteUsage(fl)
			for _, line := range wrap(help, 76) {
				fmt.Fprintf(stdout, "# %s\n", line)
			}
			fmt.Fprintf(stdout, "%s = %s\n", fl.Name, tomlValue(fl))
		})
		if table == "nntp" {
			fmt.Fprint(stdout, peersExample)
		}
	}
	return nil
}

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

// wrap breaks text into lines of at most width characters.
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

func runConfigCheck(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("config check", "config check FILE", "Checks a configuration file and names the line of every problem; exits 1 if there is one.", stderr)
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usageErr(fs, "want one FILE")
	}
	f, err := config.Load(fs.Arg(0))
	if err != nil {
		return err
	}
	if err := checkFile(f); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: ok (%s)\n", f.Path, describeFile(f))
	return nil
}

// checkFile checks every table of f: each sets its command's Options,
// which then validate (up's [nntp] too: each problem is said once).
func checkFile(f *config.File) error {
	var errs []error
	for _, table := range config.Sections {
		fs := flag.NewFlagSet(table, flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		o := configTables[table]()
		o.RegisterFlags(fs)
		err := applyTable(f, table, fs, o)
		if err == nil {
			err = f.Explain(table, o.Validate())
		}
		if err != nil && !slices.ContainsFunc(errs, func(e error) bool { return e.Error() == err.Error() }) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// describeFile says what a checked file sets.
func describeFile(f *config.File) string {
	var parts []string
	for _, s := range config.Sections {
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

// applyTable sets o from table of f where the command line (fs's flags
// already set) has not: the table's keys through fs, and a site's
// [[nntp.peer]] tables.
func applyTable(f *config.File, table string, fs *flag.FlagSet, o options) error {
	if f == nil {
		return nil
	}
	// Only o's own flags are keys of the file (not --config, --cpuprofile).
	own := flag.NewFlagSet(table, flag.ContinueOnError)
	o.RegisterFlags(own)
	var skip []string
	fs.VisitAll(func(fl *flag.Flag) {
		if own.Lookup(fl.Name) == nil {
			skip = append(skip, fl.Name)
		}
	})
	if err := f.Apply(table, fs, skip...); err != nil {
		return err
	}
	if site, ok := o.(*newsd.Options); ok && table == "nntp" {
		site.Peers = f.Peers
	}
	return nil
}

// parseCommand parses a daemon's command line: its flags, bound to o by
// o.RegisterFlags, then the table of the --config file (which the
// command line overrides), then o's checks; a problem with a value from
// the file names its line. It returns the file (nil without --config).
func parseCommand(fs *flag.FlagSet, args []string, table string, o options) (*config.File, error) {
	path := fs.String("config", "", "configuration `file` (TOML; see 'triad config'); flags given here override it")
	if err := parse(fs, args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, usageErr(fs, "unexpected argument %q", fs.Arg(0))
	}
	var f *config.File
	if *path != "" {
		var err error
		if f, err = config.Load(*path); err != nil {
			return nil, err
		}
		if err := applyTable(f, table, fs, o); err != nil {
			return nil, err
		}
	}
	if err := o.Validate(); err != nil {
		return nil, usageErr(fs, "%v", f.Explain(table, err))
	}
	return f, nil
}
