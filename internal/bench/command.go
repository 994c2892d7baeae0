package bench

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Command is one `triad bench NAME` or `triad chaos` run as its command
// sees it: the flags its configuration takes, their check and the run,
// which prints its results to an Output. cmd/triad keeps one table of
// them and adds the flags every command takes (--json, --cpuprofile).
type Command interface {
	// RegisterFlags defines the command's flags on fs, bound to its
	// fields and with their values as the defaults.
	RegisterFlags(fs *flag.FlagSet)
	// Validate checks what the flags set, naming the flag of a bad value.
	Validate() error
	// Run runs the benchmark, writes its results to o and returns its
	// verdict: an error when the run failed or missed a bound it checks.
	Run(o Output) error
}

// Output is what a Command's run is given: where its results and its
// progress go, and the executable its processes run.
type Output struct {
	// Text gets the tables for people.
	Text io.Writer
	// Log gets progress lines.
	Log io.Writer
	// Progress, if set, makes a bar for a phase (a terminal's).
	Progress func(phase string, total int64) Progress
	// JSON, if set (--json), writes v as the final JSON line.
	JSON func(v any) error
	// Binary is the triad executable the real-process benchmarks start.
	Binary string
	// Given, if set, reports whether a flag was on the command line: a
	// default that depends on other flags yields to a given value.
	Given func(flag string) bool
	// Profile, if set, writes this process's CPU profile to path until
	// stop is called.
	Profile func(path string) (stop func(), err error)
}

func (o Output) json(v any) error {
	if o.JSON == nil {
		return nil
	}
	return o.JSON(v)
}

func (o Output) given(flag string) bool { return o.Given != nil && o.Given(flag) }

// logf writes a line to Log.
func (o Output) logf(format string, args ...any) { fmt.Fprintf(o.Log, format+"\n", args...) }

// outcome is a run that prints itself and has a verdict.
type outcome interface {
	WriteText(io.Writer)
	Err() error
}

// report runs run on cfg, and writes its text and JSON line; the verdict
// is the run's.
func report[C any, R outcome](o Output, run func(C) (R, error), cfg C) error {
	res, err := run(cfg)
	if err != nil {
		return err
	}
	res.WriteText(o.Text)
	if err := o.json(res); err != nil {
		return err
	}
	return res.Err()
}

// minProcs is the least GOMAXPROCS bench store runs with.
const minProcs = 4

// Run measures the storage engine in a new folder under Dir, removed
// after.
func (c *StoreConfig) Run(o Output) error {
	// Reads of cold objects block an OS thread each, holding a P until the
	// scheduler takes it back; on small machines that leaves cores idle that
	// checksums could use. A few more Ps than cores keep them busy.
	if _, set := os.LookupEnv("GOMAXPROCS"); !set && runtime.GOMAXPROCS(0) < minProcs {
		runtime.GOMAXPROCS(minProcs)
	}
	if c.Reopen > 0 && !o.given("size") {
		c.Size = 100
	}
	tmp, err := ScratchDir(c.Dir, "bench-store-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	c.Dir, c.Progress = tmp, o.Progress
	abs, err := filepath.Abs(tmp)
	if err != nil {
		abs = tmp
	}
	o.logf("benchmarking the storage engine in %s", abs)
	res, err := Store(*c)
	if err != nil {
		return err
	}
	res.WriteText(o.Text)
	return o.json(res)
}

// Run times the sync of two stores in a new folder under Dir, removed
// after.
func (c *SyncConfig) Run(o Output) error {
	tmp, err := ScratchDir(c.Dir, "bench-sync-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	c.Dir, c.Progress = tmp, o.Progress
	return report(o, Sync, *c)
}

// Run runs the idle-connection and deep-group scenario (Limits).
func (c *LimitsConfig) Run(o Output) error {
	c.Binary, c.Log = o.Binary, o.logf
	return report(o, Limits, *c)
}

// Run floods the nodes (Flood).
func (c *FloodConfig) Run(o Output) error {
	c.Binary, c.Log = o.Binary, o.logf
	return report(o, Flood, *c)
}

// Run measures Tapestry's publish and fetch (Tapestry).
func (c *TapestryConfig) Run(o Output) error {
	c.Binary, c.Log = o.Binary, o.logf
	return report(o, Tapestry, *c)
}

// Run kills and restarts nodes under writes (Chaos).
func (c *ChaosConfig) Run(o Output) error {
	c.Binary, c.Log = o.Binary, o.logf
	return report(o, Chaos, *c)
}

// Run kills D2 nodes under a D2-FS writer (ChaosD2).
func (c *ChaosD2Config) Run(o Output) error {
	c.Binary, c.Log = o.Binary, o.logf
	return report(o, ChaosD2, *c)
}

// Run churns Tapestry nodes under locates (ChaosTapestry).
func (c *ChaosTapestryConfig) Run(o Output) error {
	c.Binary, c.Log = o.Binary, o.logf
	return report(o, ChaosTapestry, *c)
}

// RegisterFlags defines `triad bench pin`'s flags.
func (c *PinConfig) RegisterFlags(fs *flag.FlagSet) {
	fs.IntVar(&c.Frames, "frames", c.Frames, "connections that each stall a 4 MiB frame one byte short")
	fs.IntVar(&c.Readers, "readers", c.Readers, "connections that each ask --gets times for the block and read nothing")
	fs.IntVar(&c.Gets, "gets", c.Gets, "gets each reader sends")
	fs.IntVar(&c.BlockBytes, "block-bytes", c.BlockBytes, "the block's size")
	fs.DurationVar(&c.Hold, "hold", c.Hold, "how long each attack holds")
	fs.Float64Var(&c.MaxAnonMB, "max-anon-mb", c.MaxAnonMB, "the anonymous resident memory (heap and stacks) the node must stay under, in MiB")
	fs.DurationVar(&c.RingLimit, "ring-limit", c.RingLimit, "the slowest an operator's triad ring may answer")
}

// Run attacks a node (Pin) with its data under the system's temporary
// folder; it fails if the node missed a bound.
func (c *PinConfig) Run(o Output) error {
	c.Binary, c.Dir, c.Log = o.Binary, os.TempDir(), o.logf
	res, err := Pin(*c)
	if err != nil {
		return err
	}
	res.WriteText(o.Text)
	if err := o.json(res); err != nil {
		return err
	}
	if !res.Pass {
		return errors.New("bench pin: the node's memory or the operator's ring missed its bound")
	}
	return nil
}

// DHashCommand is `triad bench dhash`: one run, a scaling run (Scale), or
// a comparison of plain runs with TLS or STP's window in turns.
type DHashCommand struct {
	DHashConfig
	// CompareTLS and CompareSTP compare the run with mutual TLS or STP's
	// window against without (CompareDHash), Rounds times each.
	CompareTLS, CompareSTP bool
	Rounds                 int
}

// DefaultDHashCommand is one run of DefaultDHashConfig; a comparison has
// 3 rounds.
func DefaultDHashCommand() DHashCommand {
	return DHashCommand{DHashConfig: DefaultDHashConfig(), Rounds: 3}
}

// RegisterFlags defines `triad bench dhash`'s flags.
func (c *DHashCommand) RegisterFlags(fs *flag.FlagSet) {
	c.DHashConfig.RegisterFlags(fs)
	fs.BoolVar(&c.CompareTLS, "tls", c.CompareTLS, "run again with every connection mutual TLS 1.3 (a CA made for the run) and print what TLS costs")
	fs.IntVar(&c.Rounds, "rounds", c.Rounds, "with --tls or --compare-stp: runs of each way, in turns; the result is the ratio of their medians")
	fs.BoolVar(&c.CompareSTP, "compare-stp", c.CompareSTP, "run with every block copy sent at once (the nodes' --stp=false) and with STP's window, in turns, and print the difference")
}

// Validate checks the configuration, and that one thing is compared.
func (c DHashCommand) Validate() error {
	if err := c.DHashConfig.Validate(); err != nil {
		return err
	}
	switch {
	case c.Rounds < 1 || c.Rounds > 50:
		return fmt.Errorf("--rounds %d: want 1 to 50", c.Rounds)
	case c.CompareTLS && c.CompareSTP:
		return errors.New("--tls and --compare-stp: compare one thing at a time")
	case len(c.Scale) > 1 && (c.CompareTLS || c.CompareSTP):
		return fmt.Errorf("--nodes %s with --tls or --compare-stp: compare one thing at a time", (&nodeCounts{&c.DHashConfig}).String())
	}
	return nil
}

// Run runs the benchmark, the scaling run or the comparison, with the
// client's CPU profile in ProfileDir if set.
func (c *DHashCommand) Run(o Output) error {
	if len(c.Scale) > 1 && !o.given("concurrency") {
		c.Concurrency = 0 // DHashScale's, growing with the nodes
	}
	if c.Ops == 0 {
		c.Ops = 20000
		if c.Size > 16<<10 {
			c.Ops = 2000
		}
	}
	if err := os.MkdirAll(c.Dir, 0o755); err != nil {
		return err
	}
	if c.ProfileDir != "" && o.Profile != nil {
		if err := os.MkdirAll(c.ProfileDir, 0o755); err != nil {
			return err
		}
		stop, err := o.Profile(filepath.Join(c.ProfileDir, "client.cpu"))
		if err != nil {
			return err
		}
		defer stop()
	}
	c.Binary, c.Log, c.Progress = o.Binary, o.logf, o.Progress
	each := func(res DHashResult) { res.WriteText(o.Text) }
	switch {
	case len(c.Scale) > 1:
		s, err := DHashScale(c.DHashConfig, each)
		if err != nil {
			return err
		}
		s.WriteText(o.Text)
		return o.json(s)
	case c.CompareTLS || c.CompareSTP:
		variant := VariantTLS
		if c.CompareSTP {
			variant = VariantSTP
		}
		cmp, err := CompareDHash(c.DHashConfig, variant, c.Rounds, each)
		if err != nil {
			return err
		}
		cmp.WriteText(o.Text)
		return o.json(cmp.JSON())
	}
	res, err := DHash(c.DHashConfig)
	if err != nil {
		return err
	}
	res.WriteText(o.Text)
	return o.json(res)
}

// NNTPCommand is `triad bench nntp`: the load on one server, or spread
// over the sites of one deployment, and a probe of a disk's sync.
type NNTPCommand struct {
	NNTPConfig
	// Spread is SpreadAddrs, comma-separated.
	Spread string
	// SyncProbe, if set, is a directory whose disk's fdatasync is timed.
	SyncProbe string
}

// DefaultNNTPCommand is DefaultNNTPConfig, with no spread or probe.
func DefaultNNTPCommand() NNTPCommand { return NNTPCommand{NNTPConfig: DefaultNNTPConfig()} }

// RegisterFlags defines `triad bench nntp`'s flags.
func (c *NNTPCommand) RegisterFlags(fs *flag.FlagSet) {
	c.NNTPConfig.RegisterFlags(fs)
	fs.StringVar(&c.Spread, "spread-addrs", c.Spread, "comma-separated news `addresses` of every site of one deployment: adds the takethis-spread phase, a feed offered at all of them at once (see below)")
	fs.StringVar(&c.SyncProbe, "sync-probe", c.SyncProbe, "also measure this `directory`'s disk: the median time of a 4 KB write and fdatasync (what one durable post must wait for at least)")
}

// resolve fills in SpreadAddrs from Spread, and the articles' default
// (10,000, or 1,000 over 16 KiB).
func (c *NNTPCommand) resolve() {
	c.SpreadAddrs = nil
	for _, a := range strings.Split(c.Spread, ",") {
		if a = strings.TrimSpace(a); a != "" {
			c.SpreadAddrs = append(c.SpreadAddrs, a)
		}
	}
	if c.Articles == 0 {
		c.Articles = 10000
		if c.SizeBytes > 16<<10 {
			c.Articles = 1000
		}
	}
}

// Validate checks the configuration as the run will have it.
func (c NNTPCommand) Validate() error {
	if c.Addr == "" {
		return errors.New("--addr is required")
	}
	c.resolve()
	if err := c.NNTPConfig.Validate(); err != nil {
		return errors.New(strings.TrimPrefix(err.Error(), "bench: "))
	}
	return nil
}

// Run feeds and reads the server (NNTP), printing what ran even when a
// phase failed, then probes the disk.
func (c *NNTPCommand) Run(o Output) error {
	c.resolve()
	c.Seed, c.Log, c.Progress = uint64(time.Now().UnixNano()), o.logf, o.Progress
	res, err := NNTP(c.NNTPConfig)
	if len(res.Phases) > 0 || res.Over != nil {
		res.WriteText(o.Text)
	}
	if res.Spread != nil {
		res.Spread.WriteText(o.Text)
	}
	if err != nil {
		return err
	}
	out := struct {
		NNTPResult
		SyncP50Ms float64 `json:"sync_p50_ms,omitempty"`
	}{NNTPResult: res}
	if c.SyncProbe != "" {
		d, err := SyncLatency(c.SyncProbe, 200)
		if err != nil {
			return err
		}
		out.SyncP50Ms = float64(d) / 1e6
		fmt.Fprintf(o.Text, "disk under %s: a 4 KB write and fdatasync take %.3f ms (median of 200)\n", c.SyncProbe, out.SyncP50Ms)
	}
	return o.json(out)
}

// FSCommand is `triad bench fs`: FSConfig's flags; Open, Addrs and
// Explain are the nodes as the command's own flags name them.
type FSCommand struct {
	FSConfig
	// Addrs are the nodes' addresses (--addr), for the table.
	Addrs *string
	// Explain, if set, adds what the command knows of a failure to reach
	// the nodes.
	Explain func(error) error
}

// DefaultFSCommand copies Go's source tree (found at the run) under the
// system's temporary folder and reads 20 directories as tasks.
func DefaultFSCommand() FSCommand {
	return FSCommand{FSConfig: FSConfig{LocalDir: os.TempDir(), Tasks: 20}}
}

// RegisterFlags defines `triad bench fs`'s flags, but the nodes'.
func (c *FSCommand) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&c.Tree, "tree", c.Tree, "the `folder` to copy (default: $(go env GOROOT)/src)")
	fs.StringVar(&c.LocalDir, "local-dir", c.LocalDir, "the local disk's copy goes in a new folder under this `folder`")
	fs.IntVar(&c.Tasks, "tasks", c.Tasks, "`directories` read as tasks under each placement (0: none)")
	fs.Var(&list[string]{&c.Metrics, func(s string) (string, error) { return s, nil }}, "metrics", "comma-separated `URLs` of the gateways' metrics pages (http://HOST:PORT/metrics), to count lookups per task")
	fs.BoolVar(&c.NoCopy, "no-copy", c.NoCopy, "skip the copy and read-back (and FUSE): only the tasks")
}

// Validate checks the tasks.
func (c FSCommand) Validate() error {
	if c.Tasks < 0 || c.NoCopy && c.Tasks == 0 {
		return errors.New("--tasks must be positive with --no-copy, and never negative")
	}
	return nil
}

// Run copies Go's source tree if no Tree was given.
func (c *FSCommand) Run(o Output) error {
	if c.Tree == "" {
		out, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			return fmt.Errorf("no --tree, and go env GOROOT: %w", err)
		}
		c.Tree = filepath.Join(strings.TrimSpace(string(out)), "src")
	}
	c.Log = o.Log
	res, err := FS(c.FSConfig)
	if err != nil {
		if c.Explain != nil {
			err = c.Explain(err)
		}
		return err
	}
	if err := PrintFS(o.Text, res, *c.Addrs, c.LocalDir, !c.NoCopy); err != nil {
		return err
	}
	return o.json(res)
}
