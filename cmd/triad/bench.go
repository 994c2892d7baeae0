package main

import (
	"flag"
	"io"
	"os"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"

	"triad/internal/bench"
)

var benchAbout = help("bench")

// benchCommand is one command of `triad bench` or `triad chaos`: its name
// ("bench store"), usage line and help, what --json and --cpuprofile say ("": a final
// JSON line of results; no profile), whether it relaxes the collector
// (relaxGC), and its flags (bench.Command) with their defaults, given the
// flag set for flags of the command's own.
type benchCommand struct {
	name, usage, about, json, profile string
	relaxGC                           bool
	cmd                               func(fs *flag.FlagSet) bench.Command
}

// just is a table entry's bench.Command that takes no flags of the
// command's.
func just(c bench.Command) func(*flag.FlagSet) bench.Command {
	return func(*flag.FlagSet) bench.Command { return c }
}

const finalJSON = "print a final JSON line"

// benchCommands are `triad bench`'s commands.
func benchCommands() []benchCommand {
	return []benchCommand{
		{"bench store", "bench store [--dir D] [--size BYTES] [--objects N] [--reopen N] [--json]", bench.StoreHelp, finalJSON, "the run", false, just(new(bench.DefaultStoreConfig()))},
		{"bench dhash", "bench dhash [--nodes N | --nodes N,N,...] [--cpu-per-node CORES] [--size BYTES] [--concurrency C] [--ops N] [--explain] [--json]", bench.DHashHelp, "", "", true, just(new(bench.DefaultDHashCommand()))},
		{"bench nntp", "bench nntp --addr HOST:PORT [--size BYTES] [--conns C] [--articles N] [--phases LIST] [--json]", bench.NNTPHelp + bench.NNTPSpreadHelp, "", "the load generator", true, just(new(bench.DefaultNNTPCommand()))},
		{"bench limits", "bench limits [--idle 5000] [--articles 200000] [--json]", bench.LimitsHelp, "", "", false, just(new(bench.DefaultLimitsConfig()))},
		{"bench pin", "bench pin [--frames 80] [--readers 20] [--gets 500] [--hold 15s] [--max-anon-mb 576] [--json]", help("bench-pin"), "", "", false, just(new(bench.DefaultPinConfig()))},
		{"bench sync", "bench sync [--keys 1000000] [--outside 100000] [--dir D] [--json]", bench.SyncHelp, finalJSON, "", false, just(new(bench.DefaultSyncConfig()))},
		{"bench flood", "bench flood [--nodes N] [--uplink-kbps K] [--flood R] [--duration D] [--json]", bench.FloodHelp, "", "", true, just(new(bench.DefaultFloodConfig()))},
		{"bench tapestry", "bench tapestry [--size B] [--count N] [--window W] [--rounds R] [--json]", bench.TapestryHelp, "", "", true, just(new(bench.DefaultTapestryConfig()))},
		{"bench fs", "bench fs [--addr A,B] [--tree DIR] [--local-dir DIR] [--tasks N] [--metrics URLS] [--no-copy] [--json]", help("bench-fs"), "", "", false, func(fs *flag.FlagSet) bench.Command {
			ff, c := addFSFlags(fs), bench.DefaultFSCommand()
			c.Open, c.Addrs, c.Explain = ff.blocksWith, ff.addrs, ff.explain
			return &c
		}},
	}
}

func runBench(args []string, stdout, stderr io.Writer) error {
	subs := map[string]func([]string, io.Writer, io.Writer) error{}
	for _, c := range benchCommands() {
		subs[strings.TrimPrefix(c.name, "bench ")] = c.run
	}
	return runGroup("bench", benchAbout, subs, args, stdout, stderr)
}

// run parses the command's flags, --json and --cpuprofile, and runs it
// with this executable as the one its processes run.
func (c benchCommand) run(args []string, stdout, stderr io.Writer) error {
	fs := newFlags(c.name, c.usage, c.about, stderr)
	cmd := c.cmd(fs)
	cmd.RegisterFlags(fs)
	if c.json == "" {
		c.json = "end with one JSON line of results"
	}
	asJSON := fs.Bool("json", false, c.json)
	profile := profileFlag{new("")}
	if c.profile != "" {
		profile = addProfileFlag(fs, c.profile)
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := checkConfig(fs, cmd); err != nil {
		return err
	}
	stopProfile, err := profile.start()
	if err != nil {
		return err
	}
	defer stopProfile()
	bin, err := os.Executable()
	if err != nil {
		return err
	}
	if c.relaxGC {
		relaxGC()
	}
	out := bench.Output{Text: stdout, Log: stderr, Progress: progressTo(stderr), Binary: bin, Profile: startCPUProfile,
		Given: func(name string) bool { return flagGiven(fs, name) }}
	if *asJSON {
		out.JSON = func(v any) error { return printJSON(stdout, v) }
	}
	return cmd.Run(out)
}

// progressTo returns progress bars on w when it is a terminal, else none.
func progressTo(w io.Writer) func(string, int64) bench.Progress {
	if !isTerminal(w) {
		return nil
	}
	return func(phase string, total int64) bench.Progress {
		return bar{progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(w),
			progressbar.OptionSetDescription(phase),
			progressbar.OptionShowCount(),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
		)}
	}
}

type bar struct{ *progressbar.ProgressBar }

func (b bar) Add(n int) { b.ProgressBar.Add(n) }
func (b bar) Finish()   { b.ProgressBar.Finish() }
