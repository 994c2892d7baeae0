package main

import (
	"flag"
	"fmt"
	"io"

	"triad/internal/config"
	"triad/internal/localdeploy"
	"triad/internal/newsd"
	"triad/internal/noded"
)

var configAbout = help("config")

// configTables makes the options of each table of the file, with their
// defaults.
var configTables = config.Tables{
	"node": func() config.Options { o := noded.DefaultOptions(); return &o },
	"nntp": func() config.Options { o := newsd.DefaultOptions(); return siteOptions{&o} },
	"up":   func() config.Options { o := localdeploy.DefaultOptions(); return &o },
}

// siteOptions are a news site's Options as the [nntp] table sets them:
// with the file's [[nntp.peer]] tables.
type siteOptions struct{ *newsd.Options }

// SetPeers makes peers the site's.
func (o siteOptions) SetPeers(peers []config.Peer) { o.Peers = peers }

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
	return config.WriteExample(stdout, configTables)
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
	fmt.Fprintf(stdout, "%s: ok (%s)\n", f.Path, f.Summary())
	return nil
}

// checkFile checks every table of f.
func checkFile(f *config.File) error { return f.Check(configTables) }

// applyTable sets o from table of f where the command line (fs's flags
// already set) has not (config.File.ApplyOptions): a site's Options take
// the file's [[nntp.peer]] tables too.
func applyTable(f *config.File, table string, fs *flag.FlagSet, o config.Options) error {
	if site, ok := o.(*newsd.Options); ok {
		o = siteOptions{site}
	}
	return f.ApplyOptions(table, fs, o)
}

// parseCommand parses a daemon's command line: its flags, bound to o by
// o.RegisterFlags, then the table of the --config file (which the
// command line overrides), then o's checks; a problem with a value from
// the file names its line. It returns the file (nil without --config).
func parseCommand(fs *flag.FlagSet, args []string, table string, o config.Options) (*config.File, error) {
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
