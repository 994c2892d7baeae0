package maint_test

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"triad/internal/deploy"
	"triad/internal/deploy/deploytest"
	"triad/internal/maint"
	"triad/internal/store"
	"triad/internal/store/mem"
)

// TestTrace replays the scripts in testdata/trace on hosts running the
// ring, the block store and maintenance, driven by hand (deploytest), one
// fresh cluster per script. Besides deploytest's directives a script may
// use maintenance's, which maintTrace.directives registers. Regenerate the
// expectations with
//
//	go test ./internal/maint -run TestTrace -rewrite
//
// and read the diff: a changed trace is a changed protocol.
func TestTrace(t *testing.T) {
	datadriven.Walk(t, "testdata/trace", func(t *testing.T, path string) {
		tr := &maintTrace{c: deploytest.New(traceOptions(testOptions{noAudits: true}), 1), last: map[string]maint.Stats{}}
		tr.c.Register(tr.directives())
		datadriven.RunTestAny(t, path, tr.run)
	})
}

// traceOptions are o's hosts for a trace: rounds every 10 minutes (unless
// o says otherwise), no audits unless o asks (audit_test.go tests them),
// and a ring whose periodic work is a day apart, so that once it has
// formed, what a script shows in minutes is maintenance alone.
func traceOptions(o testOptions) deploy.Options {
	if o.interval == 0 {
		o.interval = 10 * time.Minute
	}
	opts := o.deployOptions()
	if o.fragments {
		// 2-of-4 fragments: a block's fragments fit on five hosts.
		opts.Blocks.DataFrags, opts.Blocks.TotalFrags = 2, 4
	}
	opts.Ring.StabilizeInterval = 24 * time.Hour
	opts.Ring.FixFingersInterval = 24 * time.Hour
	opts.Ring.SaveInterval = 0
	opts.Ring.ProbeInterval = 0
	return opts
}

// maintTrace runs a trace script's directives.
type maintTrace struct {
	c    *deploytest.Cluster
	last map[string]maint.Stats // each host's counters at its last stats
}

// directives are maintenance's:
//
//	options [budget=BYTES/S] [fragments] [audits] [interval=DURATION]
//	                    the options of the hosts added from now on
//	                    (testOptions; before the first add-host)
//	lose NAME (data=TEXT | key=HEX)
//	                    the host loses its copy of a block (damaged, then
//	                    quarantined by a read)
//	store NAME data=TEXT
//	                    put a block into the host's engine alone, behind
//	                    the block store's back, for 30 days
//	holders (data=TEXT | key=HEX)
//	                    the running hosts whose engine holds the block
//	stats NAME          the host's maintenance counters that grew since its
//	                    last stats, or since the last stabilize
func (tr *maintTrace) directives() deploytest.Directives {
	return deploytest.Directives{
		"options": {Usage: "options [budget=BYTES/S] [fragments] [audits] [interval=DURATION]", Run: tr.options},
		"lose":    {Usage: "lose NAME (data=TEXT | key=HEX)", Run: tr.lose},
		"store":   {Usage: "store NAME data=TEXT", Run: tr.store},
		"holders": {Usage: "holders (data=TEXT | key=HEX)", Run: tr.holders},
		"stats":   {Usage: "stats NAME", Run: tr.stats},
	}
}

// run runs one directive; after a stabilize, stats counts from there.
func (tr *maintTrace) run(t testing.TB, d *datadriven.TestData) string {
	out := tr.c.Run(t, d)
	if d.Cmd == "stabilize" {
		tr.baseline()
	}
	return out
}

func (tr *maintTrace) options(c *deploytest.Cluster, t testing.TB, d *datadriven.TestData) {
	var o testOptions
	d.MaybeScanArgs(t, "budget", &o.budget)
	o.fragments = d.HasArg("fragments")
	o.noAudits = !d.HasArg("audits")
	var s string
	if d.MaybeScanArgs(t, "interval", &s) {
		var err error
		if o.interval, err = time.ParseDuration(s); err != nil {
			d.Fatalf(t, "%v", err)
		}
	}
	c.Options = traceOptions(o)
}

func (tr *maintTrace) lose(c *deploytest.Cluster, t testing.TB, d *datadriven.TestData) {
	h, key := c.HostArg(t, d), c.KeyArg(t, d)
	e, ok := h.Storage().Engine().(*mem.Mem)
	if !ok {
		d.Fatalf(t, "%s keeps its blocks in a %T", h.Name, h.Storage().Engine())
	}
	if err := e.Damage(key); err != nil {
		d.Fatalf(t, "%v", err)
	}
	if _, _, err := e.Get(key); err == nil {
		d.Fatalf(t, "%s still reads its damaged copy of %s", h.Name, c.ID(key))
	}
	c.Logf("%s: lost its copy of %s\n", h.Name, c.ID(key))
}

func (tr *maintTrace) store(c *deploytest.Cluster, t testing.TB, d *datadriven.TestData) {
	h, key := c.HostArg(t, d), c.KeyArg(t, d)
	var data string
	d.ScanArgs(t, "data", &data)
	if err := h.Storage().Engine().Put(key, []byte(data), c.Now().Add(30*24*time.Hour), store.PutOptions{}); err != nil {
		d.Fatalf(t, "%v", err)
	}
	c.Logf("%s: stored %s in its engine alone\n", h.Name, c.ID(key))
}

func (tr *maintTrace) holders(c *deploytest.Cluster, t testing.TB, d *datadriven.TestData) {
	key := c.KeyArg(t, d)
	var out []string
	for _, h := range c.Hosts() {
		if !h.Up() {
			continue
		}
		if m, err := h.Storage().Engine().Stat(key); err == nil {
			kind := ""
			if m.Opaque {
				kind = "(fragment)"
			}
			out = append(out, h.Name+kind)
		}
	}
	c.Logf("%s: held by [%s]\n", c.ID(key), strings.Join(out, " "))
}

func (tr *maintTrace) stats(c *deploytest.Cluster, t testing.TB, d *datadriven.TestData) {
	h := c.HostArg(t, d)
	if !h.Up() || h.Node.Maint == nil {
		d.Fatalf(t, "%s runs no maintenance", h.Name)
	}
	now := h.Node.Maint.Stats
	last := tr.last[h.Name]
	tr.last[h.Name] = now
	c.Logf("%s: %s\n", h.Name, grown(last, now))
}

// baseline notes every running host's counters: stats prints what grew
// since.
func (tr *maintTrace) baseline() {
	for _, h := range tr.c.Hosts() {
		if h.Up() && h.Node.Maint != nil {
			tr.last[h.Name] = h.Node.Maint.Stats
		}
	}
}

// grown prints the counters that grew from a to b, as name+n, in the
// order they are declared.
func grown(a, b maint.Stats) string {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	var out []string
	for i := range vb.NumField() {
		if n := vb.Field(i).Uint() - va.Field(i).Uint(); n > 0 {
			out = append(out, fmt.Sprintf("%s+%d", vb.Type().Field(i).Name, n))
		}
	}
	if len(out) == 0 {
		return "nothing new"
	}
	return strings.Join(out, " ")
}
