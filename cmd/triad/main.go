package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"strings"
)

// command is one subcommand.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

var commands []command

func init() {
	commands = []command{
		{"up", "start a small local ring on 127.0.0.1 (try this first)", runUp},
		{"node", "run one triad node process", runNode},
		{"nntp", "run a news server (NNTP), standalone or on the DHT", runNNTP},
		{"site", "run a news site of the DHT in one process: a node and the news server on it", runSite},
		{"status", "the whole deployment from any node: every node up or down, its protocols, the news sites' feeds; exit 1 if something needs the operator", runStatus},
		{"ring", "show the ring as one node sees it", runRing},
		{"lookup", "find the successors of a key", runLookup},
		{"put", "store a file in the DHT; prints its key", runPut},
		{"get", "fetch a file from the DHT by key", runGet},
		{"stat", "show which nodes hold a key", runStat},
		{"publish", "store a file on one Tapestry node and publish it; prints its key", runPublish},
		{"unpublish", "stop publishing a key from a Tapestry node", runUnpublish},
		{"locate", "find the servers of a published key through Tapestry", runLocate},
		{"fs", "D2-FS volumes on nodes that run --d2: mkvol, mount (FUSE), ls, cat, put, get, mkdir, mv, rm, stat, fsck", runFS},
		{"fetch", "fetch a published key's bytes through Tapestry", runFetch},
		{"tapestry", "show a node's Tapestry routing table or counters (tapestry table, status)", runTapestry},
		{"maint", "show, pause or resume a node's maintenance (maint status)", runMaint},
		{"news", "a news site's groups and feeds while it runs (news newgroup, rmgroup, list, feeds, pause, resume)", runNews},
		{"sim", "run a simulation experiment (sim ring, dhash, passingtone)", runSim},
		{"bench", "measure a part on this machine (bench store, dhash, nntp, limits, sync)", runBench},
		{"ca", "a deployment's certificate authority (ca init, issue, revoke)", runCA},
		{"config", "print an example configuration file, or check one (config example, check)", runConfig},
		{"chaos", "kill -9 and restart real nodes under writes; check nothing acknowledged is lost", runChaos},
		{"version", "print triad's version, the commit it was built from and the Go version", runVersion},
	}
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		if len(args) > 1 {
			return run([]string{args[1], "--help"}, stdout, stderr)
		}
		usage(stdout)
		return 0
	}
	for _, c := range commands {
		if c.name == args[0] {
			err := c.run(args[1:], stdout, stderr)
			switch {
			case err == nil:
				return 0
			case errors.Is(err, flag.ErrHelp):
				return 0
			case errors.Is(err, errUsage):
				return 2
			default:
				fmt.Fprintf(stderr, "triad %s: %v\n", c.name, err)
				return 1
			}
		}
	}
	fmt.Fprintf(stderr, "triad: unknown command %q\n\n", args[0])
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, `triad is a DHT storage system: servers of sites that trust each other pool
their disks into one self-healing store (a Chord ring, DHash blocks, and
Passing Tone's maintenance, which makes lost copies again by syncing with
ring neighbours only), with a news server on it and a simulator that runs
thousands of the same nodes.

Usage: triad <command> [flags]

Commands:`)
	for _, c := range commands {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, `
Run 'triad <command> --help' for a command's flags.`)
}

// runGroup dispatches a command made of sub-commands (sim ring, bench
// store) and explains the group when asked or when the name is unknown.
func runGroup(group, about string, subs map[string]func([]string, io.Writer, io.Writer) error, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "--help" || args[0] == "-help" || args[0] == "-h" {
		fmt.Fprintf(stderr, "Usage: triad %s <name> [flags]\n%s\n", group, about)
		if len(args) == 0 {
			return errUsage
		}
		return nil
	}
	if run, ok := subs[args[0]]; ok {
		return run(args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "triad %s: unknown name %q\n%s\n", group, args[0], about)
	return errUsage
}

// errUsage reports bad command-line usage; the message was already printed.
var errUsage = errors.New("usage")

// newFlags makes a flag set whose --help prints the given description,
// usage line and flags.
func newFlags(name, usageLine, about string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: triad %s\n\n%s\n", usageLine, strings.TrimSpace(about))
		if hasFlags(fs) {
			fmt.Fprintln(fs.Output(), "\nFlags:")
			fs.PrintDefaults()
		}
	}
	return fs
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parse parses flags and maps errors to errUsage. A bad flag prints the
// flag package's one-line error and a hint, not the whole usage (a
// command's flags fill a screen); --help prints it all.
func parse(fs *flag.FlagSet, args []string) error {
	full := fs.Usage
	fs.Usage = func() {}
	err := fs.Parse(args)
	fs.Usage = full
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		full()
		return err
	}
	printHint(fs)
	return errUsage
}

// printHint is the line after a usage error that says where the flags are.
func printHint(fs *flag.FlagSet) {
	fmt.Fprintf(fs.Output(), "Run 'triad %s --help' for its usage and flags.\n", fs.Name())
}

// parseMixed parses flags that may come before or after the positional
// arguments (triad put FILE --expire 1h) and returns the positionals.
func parseMixed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parse(fs, args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// usageErr prints a usage problem and a hint to --help, and returns
// errUsage.
func usageErr(fs *flag.FlagSet, format string, args ...any) error {
	fmt.Fprintf(fs.Output(), "triad %s: %s\n", fs.Name(), fmt.Sprintf(format, args...))
	printHint(fs)
	return errUsage
}

// printJSON writes v as the one JSON line that --json promises scripts.
func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// profileFlag is the --cpuprofile flag every long-running command takes.
type profileFlag struct{ path *string }

// addProfileFlag adds --cpuprofile to fs; what says what is profiled.
func addProfileFlag(fs *flag.FlagSet, what string) profileFlag {
	return profileFlag{fs.String("cpuprofile", "", "write a CPU profile of "+what+" to this `file`")}
}

// start begins the profile named on the command line, if any; stop ends it.
func (p profileFlag) start() (stop func(), err error) { return startCPUProfile(*p.path) }

// startDaemon readies the runtime for a long-running process: the CPU
// profile named on the command line, a relaxed collector (relaxGC) and a
// soft memory limit of memoryMB MiB (0: none); stop ends the profile.
func (p profileFlag) startDaemon(memoryMB int) (stop func(), err error) {
	if stop, err = p.start(); err != nil {
		return nil, err
	}
	relaxGC()
	limitMemory(memoryMB)
	return stop, nil
}

// startCPUProfile writes a CPU profile to path until the returned function
// is called; an empty path profiles nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// relaxGC lets the heap grow to 5x the live data before a collection,
// unless GOGC says otherwise. Nodes and load generators keep little live
// data (blocks live on disk) but allocate a buffer per block in flight, so
// at Go's default the collector ran every few dozen 64 KB gets; this cut
// what a get costs by 10-20% (docs/dhash.md). A node's write and store
// windows bound its live data, and so its heap.
func relaxGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
}

// limitMemory sets the Go runtime's soft memory limit to mb MiB (0: none)
// unless GOMEMLIMIT is set: past it the collector runs as often as it
// must, whatever GOGC allows.
func limitMemory(mb int) {
	if mb > 0 && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(int64(mb) << 20)
	}
}
