package deploytest

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"triad/internal/id"
)

// A Directive is one kind of line in a trace script: its synopsis, as an
// unknown directive's error lists it, and the function that runs it.
type Directive struct {
	// Usage is the synopsis: the directive's name and its arguments.
	Usage string
	// Run does it, writing to c's trace: events as they happen, results
	// with c.Logf. It fails the test with d.Fatalf.
	Run func(c *Cluster, t testing.TB, d *datadriven.TestData)
}

// Directives maps a directive's name to it.
type Directives map[string]Directive

// ringDirectives drive the hosts, the clock, the network and the ring.
// blockDirectives (blocks.go) drive the block store; a protocol's test
// adds its own with Cluster.Register.
var ringDirectives = Directives{
	"add-host":    {"add-host NAME (id=PREFIX[,PREFIX...] | d2=PREFIX [id=PREFIX]) [boot=NAME]", (*Cluster).doAddHost},
	"crash":       {"crash NAME", (*Cluster).doCrash},
	"restart":     {"restart NAME", (*Cluster).doRestart},
	"tick":        {"tick DURATION [quiet]", (*Cluster).doTick},
	"run":         {"run DURATION [quiet]", (*Cluster).doRun},
	"deliver":     {"deliver [n=N] [from=NAME] [to=NAME]", (*Cluster).doDeliver},
	"drop":        {"drop [n=N] [from=NAME] [to=NAME]", (*Cluster).doDrop},
	"deliver-all": {"deliver-all [quiet]", (*Cluster).doDeliverAll},
	"in-flight":   {"in-flight", (*Cluster).doInFlight},
	"stabilize":   {"stabilize [max=N] [every=DURATION]", (*Cluster).doStabilize},
	"ring":        {"ring", (*Cluster).doRing},
}

// Register adds directives that scripts run on c may use: a protocol's
// test registers its own. A name already taken is a test's mistake and
// panics.
func (c *Cluster) Register(ds Directives) {
	for name, d := range ds {
		if _, ok := c.directives[name]; ok {
			panic(fmt.Sprintf("deploytest: directive %q registered twice", name))
		}
		c.directives[name] = d
	}
}

// Run runs one directive of a trace script and returns its trace. Each
// event prints a line (a delivered message, "TIME host: timer", "host:
// start"), then indented what it sent and the vnode lists it changed.
// With the argument quiet only a summary is printed, and results (a put's
// holders, a get's block) whenever they come.
func (c *Cluster) Run(t testing.TB, d *datadriven.TestData) string {
	dir, ok := c.directives[d.Cmd]
	if !ok {
		var usage []string
		for _, name := range slices.Sorted(maps.Keys(c.directives)) {
			usage = append(usage, "  "+c.directives[name].Usage)
		}
		d.Fatalf(t, "unknown directive %q; the directives are:\n%s", d.Cmd, strings.Join(usage, "\n"))
	}
	if d.HasArg("quiet") {
		c.verbose = false
		defer func() { c.verbose = true }()
	}
	dir.Run(c, t, d)
	return c.Flush()
}

// doAddHost adds a host with a vnode at each ID (hex prefixes), joining
// through boot, and starts it. With d2=PREFIX its D2 node starts at that
// position, and its ring ID, unless given, is the same prefix.
func (c *Cluster) doAddHost(t testing.TB, d *datadriven.TestData) {
	name := c.bareArg(t, d)
	var pos string
	atD2 := d.MaybeScanArgs(t, "d2", &pos)
	ids := []string{pos}
	if !atD2 || d.HasArg("id") {
		ids = c.listArg(t, d, "id")
	}
	var xs []id.ID
	for _, p := range ids {
		x, err := c.ParseID(p)
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		xs = append(xs, x)
	}
	var boot string
	d.MaybeScanArgs(t, "boot", &boot)
	var err error
	if atD2 {
		var at id.ID
		if at, err = c.ParseD2Key(pos); err == nil {
			_, err = c.AddD2Host(name, xs, at, boot)
		}
	} else {
		_, err = c.AddHost(name, xs, boot)
	}
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
}

// doCrash stops a host at once; its storage is kept.
func (c *Cluster) doCrash(t testing.TB, d *datadriven.TestData) {
	c.Crash(c.hostArg(t, d, c.bareArg(t, d)))
}

// doRestart boots a crashed host again from its storage.
func (c *Cluster) doRestart(t testing.TB, d *datadriven.TestData) {
	if err := c.Restart(c.hostArg(t, d, c.bareArg(t, d))); err != nil {
		d.Fatalf(t, "%v", err)
	}
}

// doTick moves the clock, firing due timers in order; what they send stays
// in flight.
func (c *Cluster) doTick(t testing.TB, d *datadriven.TestData) {
	dur := c.durationArg(t, d)
	f0 := c.Fired
	c.Tick(dur)
	if d.HasArg("quiet") {
		c.Logf("%s fired\n", plural(c.Fired-f0, "timer"))
	}
}

// doRun moves the clock as tick does, but delivers every message at once,
// after the event that sent it.
func (c *Cluster) doRun(t testing.TB, d *datadriven.TestData) {
	dur := c.durationArg(t, d)
	m0, f0 := c.Delivered, c.Fired
	if err := c.RunFor(dur); err != nil {
		d.Fatalf(t, "%v", err)
	}
	if d.HasArg("quiet") {
		c.Logf("%s fired, %s delivered\n", plural(c.Fired-f0, "timer"), plural(c.Delivered-m0, "message"))
	}
}

// doDeliver delivers the messages in flight now (or the first n of those
// from and to the hosts named), oldest first; what they cause to be sent
// stays in flight.
func (c *Cluster) doDeliver(t testing.TB, d *datadriven.TestData) {
	if c.Deliver(c.filterArg(t, d)) == 0 {
		c.Logf("nothing to deliver\n")
	}
}

// doDrop loses messages in flight, chosen as deliver chooses them.
func (c *Cluster) doDrop(t testing.TB, d *datadriven.TestData) {
	if c.Drop(c.filterArg(t, d)) == 0 {
		c.Logf("nothing to drop\n")
	}
}

// doDeliverAll delivers until nothing is in flight; time stands.
func (c *Cluster) doDeliverAll(t testing.TB, d *datadriven.TestData) {
	n, err := c.DeliverAll()
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	if d.HasArg("quiet") || n == 0 {
		c.Logf("%s delivered\n", plural(n, "message"))
	}
}

// doInFlight lists the messages in flight.
func (c *Cluster) doInFlight(testing.TB, *datadriven.TestData) {
	for _, m := range c.flight {
		c.Logf("%s\n", c.FormatEnvelope(m))
	}
	if len(c.flight) == 0 {
		c.Logf("nothing in flight\n")
	}
}

// doStabilize runs rounds of run (every, 1s) until the ring is right, at
// most max (60); it prints a summary and the ring.
func (c *Cluster) doStabilize(t testing.TB, d *datadriven.TestData) {
	max, every := 60, time.Second
	d.MaybeScanArgs(t, "max", &max)
	var s string
	if d.MaybeScanArgs(t, "every", &s) {
		var err error
		if every, err = time.ParseDuration(s); err != nil {
			d.Fatalf(t, "%v", err)
		}
	}
	m0, f0 := c.Delivered, c.Fired
	var rounds int
	var ok bool
	var err error
	c.Quietly(func() { rounds, ok, err = c.Stabilize(max, every) })
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	verdict := "stable"
	if !ok {
		verdict = "NOT stable"
	}
	c.Logf("%s after %s, at %s: %s delivered, %s fired\n", verdict, plural(rounds, "round"),
		Seconds(c.now), plural(c.Delivered-m0, "message"), plural(c.Fired-f0, "timer"))
	c.Logf("%s", c.Ring())
}

// doRing prints every vnode's lists, the hosts down, and what is wrong.
func (c *Cluster) doRing(testing.TB, *datadriven.TestData) {
	c.Logf("%s", c.Ring())
}

// bareArg is the directive's first argument when it has no value (a host
// name, a duration).
func (c *Cluster) bareArg(t testing.TB, d *datadriven.TestData) string {
	if len(d.CmdArgs) == 0 || len(d.CmdArgs[0].Vals) > 0 {
		d.Fatalf(t, "%s wants a bare first argument", d.Cmd)
	}
	return d.CmdArgs[0].Key
}

// durationArg is the directive's bare first argument as a duration.
func (c *Cluster) durationArg(t testing.TB, d *datadriven.TestData) time.Duration {
	dur, err := time.ParseDuration(c.bareArg(t, d))
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	return dur
}

// filterArg reads [n=N] [from=NAME] [to=NAME].
func (c *Cluster) filterArg(t testing.TB, d *datadriven.TestData) Filter {
	var f Filter
	d.MaybeScanArgs(t, "n", &f.N)
	d.MaybeScanArgs(t, "from", &f.From)
	d.MaybeScanArgs(t, "to", &f.To)
	return f
}

// KeyArg reads a block's key given as data=TEXT (the key of that content)
// or key=HEX.
func (c *Cluster) KeyArg(t testing.TB, d *datadriven.TestData) id.ID {
	var data, hex string
	if d.MaybeScanArgs(t, "data", &data) {
		return id.Key([]byte(data))
	}
	d.ScanArgs(t, "key", &hex)
	key, err := id.Parse(hex, id.Bytes)
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	return key
}

// listArg reads key=a,b,c (or key=(a,b,c)).
func (c *Cluster) listArg(t testing.TB, d *datadriven.TestData, key string) []string {
	arg, ok := d.Arg(key)
	if !ok {
		d.Fatalf(t, "%s wants %s=", d.Cmd, key)
	}
	var out []string
	for _, v := range arg.Vals {
		out = append(out, strings.Split(v, ",")...)
	}
	return out
}

// HostArg is the host the directive names first.
func (c *Cluster) HostArg(t testing.TB, d *datadriven.TestData) *Host {
	return c.hostArg(t, d, c.bareArg(t, d))
}

func (c *Cluster) hostArg(t testing.TB, d *datadriven.TestData, name string) *Host {
	h := c.byName[name]
	if h == nil {
		d.Fatalf(t, "no host %q", name)
	}
	return h
}

// plural prints n things.
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}
