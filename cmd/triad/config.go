package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"triad/internal/config"
	"triad/internal/usenet"
)

const configAbout = `
One configuration file (TOML) can hold what the flags of 'triad node',
'triad nntp' and 'triad up' say, a table for each: [node], [nntp], [up]. The
keys are the flag names (listen, data, cache-mb, expire, ...); a news site's
peers and feeds are [[nntp.peer]] tables (name, addr, mode, secret, groups),
in place of a --peers file. Each command reads its own table when given
--config FILE; a flag on the command line overrides the file.

  triad config example           print a file with every key, its default and its help
  triad config check FILE        check a file: unknown keys, values a flag refuses,
                                 addresses that are not host:port, negative numbers
                                 and the commands' own checks, each named by its line

Example:
  triad config example > triad.toml
  triad config check triad.toml
  triad node --config triad.toml
  triad nntp --config triad.toml --listen 127.0.0.1:1120`

// configCommands are the commands that read a table of the file, by
// table name.
var configCommands = map[string]func([]string, io.Writer, io.Writer) error{
	"node": runNode, "nntp": runNNTP, "up": runUp,
}

// notInFile are flags a file does not set.
var notInFile = []string{"config", "cpuprofile"}

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
	for _, section := range config.Sections {
		fs := commandFlags(configCommands[section])
		fmt.Fprintf(stdout, "\n[%s]\n", section)
		fs.VisitAll(func(fl *flag.Flag) {
			if slices.Contains(notInFile, fl.Name) {
				return
			}
			_, help := flag.UnquoteUsage(fl)
			for _, line := range wrap(help, 76) {
				fmt.Fprintf(stdout, "# %s\n", line)
			}
			fmt.Fprintf(stdout, "%s = %s\n", fl.Name, tomlValue(fl))
		})
		if section == "nntp" {
			fmt.Fprint(stdout, `
# Peers and feeds of a news site, one table each (in place of --peers FILE).
# mode: announce (send it headers and keys of what is listed here, take its
# announcements), mesh (announce, in a full mesh: only what entered the ring
# here), feed (a traditional server upstream, sent whole articles). secret:
# the same on both sides of a link; a feed may have none; "tls" makes the link
# mutual TLS (this site needs tls, the peer's addr is its peer-listen, and its
# certificate must be issued to its name). groups: a wildmat of the groups the
# peer is sent (default all).
# [[nntp.peer]]
# name = "site2"
# addr = "news2.example.net:119"
# mode = "mesh"
# secret = "the secret of this link"
# groups = "*"
`)
		}
	}
	return nil
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
	path := fs.Arg(0)
	f, err := config.Load(path)
	if err != nil {
		return err
	}
	// Each command reads its table and runs its own checks, and stops
	// there.
	var errs []error
	for _, section := range config.Sections {
		// up checks the [nntp] table too: each problem is said once.
		if err := checkCommand(configCommands[section], path); err != nil && !slices.ContainsFunc(errs, func(e error) bool { return e.Error() == err.Error() }) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: ok (%s)\n", path, describeFile(f))
	return nil
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

// addConfigFlag adds --config to a command that reads a table of the file.
func addConfigFlag(fs *flag.FlagSet) *string {
	return fs.String("config", "", "configuration `file` (TOML; see 'triad config'); flags given here override it")
}

// applyConfig sets the flags of fs that the command line did not from
// the table section of the file at path; nil and no error without a path.
func applyConfig(fs *flag.FlagSet, path, section string) (*config.File, error) {
	if path == "" {
		return nil, nil
	}
	f, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	return f, f.Apply(section, fs, notInFile...)
}

// configPeers are the [[nntp.peer]] tables of a file as a site's peers.
func configPeers(f *config.File) ([]usenet.Peer, error) {
	if f == nil {
		return nil, nil
	}
	var peers []usenet.Peer
	seen := map[string]bool{}
	for _, p := range f.Peers {
		secret := p.Secret
		if secret == "" {
			secret = "-"
		}
		peer, err := peerOf(p.Name, p.Addr, p.Mode, secret, p.Groups, seen)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %v", f.Path, p.Line, err)
		}
		peers = append(peers, peer)
	}
	return peers, nil
}

// flagsOnly, as a command's only argument, makes parse hand the command's
// flag set to commandFlags instead of running it; checkOnly, as its last,
// makes the command stop (returning nil) once its flags are checked, at
// its call of checkedOnly.
const (
	flagsOnly = "\x00flags-only"
	checkOnly = "\x00check-only"
)

var (
	errFlagsOnly = errors.New("flags only")
	flagSink     struct {
		sync.Mutex
		fs *flag.FlagSet
	}
	checking atomic.Pointer[flag.FlagSet] // the flag set checkCommand is checking
)

// checkCommand runs a command on a configuration file until its flags are
// checked, and returns the first line of what it said if they are bad.
func checkCommand(run func([]string, io.Writer, io.Writer) error, path string) error {
	flagSink.Lock()
	defer flagSink.Unlock()
	defer checking.Store(nil)
	var said strings.Builder
	err := run([]string{"--config", path, checkOnly}, io.Discard, &said)
	if err == nil {
		return nil
	}
	// What usageErr printed before the usage, without "triad node: ".
	if msg, _, _ := strings.Cut(said.String(), "\n\n"); msg != "" {
		_, msg, _ = strings.Cut(msg, ": ")
		return errors.New(msg)
	}
	return err
}

// checkedOnly reports whether fs is a command's being checked by
// checkCommand: then the command returns before it starts anything.
func checkedOnly(fs *flag.FlagSet) bool { return fs != nil && checking.Load() == fs }

// commandFlags is the flag set of a command, with its defaults, without
// running it.
func commandFlags(run func([]string, io.Writer, io.Writer) error) *flag.FlagSet {
	flagSink.Lock()
	defer flagSink.Unlock()
	flagSink.fs = nil
	run([]string{flagsOnly}, io.Discard, io.Discard)
	if flagSink.fs == nil {
		panic("triad: a command that reads the configuration file does not parse its flags with parse")
	}
	return flagSink.fs
}
