package deploytest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"triad/internal/dhash"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/wire"
)

// Run runs one directive of a trace script and returns its trace:
//
//	add-host NAME id=PREFIX[,PREFIX...] [boot=NAME]
//	                    add a host with a vnode at each ID (hex prefixes),
//	                    joining through boot, and start it
//	crash NAME          stop a host at once; its storage is kept
//	restart NAME        boot a crashed host again from its storage
//	tick DURATION [quiet]
//	                    move the clock, firing due timers in order; what
//	                    they send stays in flight
//	run DURATION [quiet]
//	                    move the clock as tick does, but deliver every
//	                    message at once, after the event that sent it
//	deliver [n=N] [from=NAME] [to=NAME]
//	                    deliver the messages in flight now (or the first n
//	                    of those from and to the hosts named), oldest first;
//	                    what they cause to be sent stays in flight
//	drop [n=N] [from=NAME] [to=NAME]
//	                    lose messages in flight
//	deliver-all [quiet] deliver until nothing is in flight (time stands)
//	in-flight           list the messages in flight
//	stabilize [max=N] [every=DURATION]
//	                    rounds of run (1s) until the ring
//	                    is right, at most max (60); prints a summary and
//	                    the ring
//	ring                every vnode's lists, hosts down, and what is wrong
//	put from=NAME data=TEXT
//	                    put a block from a host
//	get from=NAME (data=TEXT | key=HEX)
//	                    get a block (by its content or key) from a host
//	damage NAME (data=TEXT | key=HEX)
//	                    damage the host's stored copy of a block, as a bad
//	                    sector would: its next read quarantines it
//
// Each event prints a line (a delivered message, "TIME host: timer", "host:
// start"), then indented what it sent and the vnode lists it changed. With
// quiet only a summary is printed, and results (a put's holders, a get's
// block) whenever they come.
func (c *Cluster) Run(t testing.TB, d *datadriven.TestData) string {
	quiet := d.HasArg("quiet")
	if quiet {
		c.verbose = false
		defer func() { c.verbose = true }()
	}
	switch d.Cmd {
	case "add-host":
		name := c.bareArg(t, d)
		var ids []id.ID
		for _, p := range c.listArg(t, d, "id") {
			x, err := c.ParseID(p)
			if err != nil {
				d.Fatalf(t, "%v", err)
			}
			ids = append(ids, x)
		}
		var boot string
		d.MaybeScanArgs(t, "boot", &boot)
		if _, err := c.AddHost(name, ids, boot); err != nil {
			d.Fatalf(t, "%v", err)
		}
	case "crash":
		c.Crash(c.hostArg(t, d, c.bareArg(t, d)))
	case "restart":
		if err := c.Restart(c.hostArg(t, d, c.bareArg(t, d))); err != nil {
			d.Fatalf(t, "%v", err)
		}
	case "tick":
		dur, err := time.ParseDuration(c.bareArg(t, d))
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		f0 := c.Fired
		c.Tick(dur)
		if quiet {
			c.Logf("%s fired\n", plural(c.Fired-f0, "timer"))
		}
	case "run":
		dur, err := time.ParseDuration(c.bareArg(t, d))
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		m0, f0 := c.Delivered, c.Fired
		if err := c.RunFor(dur); err != nil {
			d.Fatalf(t, "%v", err)
		}
		if quiet {
			c.Logf("%s fired, %s delivered\n", plural(c.Fired-f0, "timer"), plural(c.Delivered-m0, "message"))
		}
	case "deliver", "drop":
		var f Filter
		d.MaybeScanArgs(t, "n", &f.N)
		d.MaybeScanArgs(t, "from", &f.From)
		d.MaybeScanArgs(t, "to", &f.To)
		var n int
		if d.Cmd == "deliver" {
			n = c.Deliver(f)
		} else {
			n = c.Drop(f)
		}
		if n == 0 {
			c.Logf("nothing to %s\n", d.Cmd)
		}
	case "deliver-all":
		n, err := c.DeliverAll()
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
		if quiet || n == 0 {
			c.Logf("%s delivered\n", plural(n, "message"))
		}
	case "in-flight":
		for _, m := range c.flight {
			c.Logf("%s\n", c.FormatEnvelope(m))
		}
		if len(c.flight) == 0 {
			c.Logf("nothing in flight\n")
		}
	case "stabilize":
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
	case "ring":
		c.Logf("%s", c.Ring())
	case "put":
		var from, data string
		d.ScanArgs(t, "from", &from)
		d.ScanArgs(t, "data", &data)
		h := c.hostArg(t, d, from)
		err := c.Do(h, fmt.Sprintf("%s: put %q", h.Name, data), func(env node.Env) {
			b := h.Node.Blocks
			b.Put(env, []byte(data), env.Now().Add(b.Config().DefaultExpiry), wire.RedundancyDefault,
				func(env node.Env, key id.ID, holders []wire.NodeRef, err error) {
					if err != nil {
						c.Logf("  %s: put %q failed: %v\n", h.Name, data, err)
						return
					}
					c.Logf("  %s: put %q done: key=%s holders=%s\n", h.Name, data, c.ID(key), c.Refs(holders))
				})
		})
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
	case "get":
		var from string
		d.ScanArgs(t, "from", &from)
		h := c.hostArg(t, d, from)
		key := c.keyArg(t, d)
		err := c.Do(h, fmt.Sprintf("%s: get %s", h.Name, c.ID(key)), func(env node.Env) {
			h.Node.Blocks.Get(env, key, wire.RedundancyDefault, func(env node.Env, b dhash.Block, err error) {
				if err != nil {
					c.Logf("  %s: get %s failed: %v\n", h.Name, c.ID(key), err)
					return
				}
				c.Logf("  %s: get %s done: %s\n", h.Name, c.ID(key), c.data(b.Data, false))
			})
		})
		if err != nil {
			d.Fatalf(t, "%v", err)
		}
	case "damage":
		h := c.hostArg(t, d, c.bareArg(t, d))
		key := c.keyArg(t, d)
		if err := c.Damage(h, key); err != nil {
			d.Fatalf(t, "%v", err)
		}
		c.Logf("%s: damaged its copy of %s\n", h.Name, c.ID(key))
	default:
		d.Fatalf(t, "unknown directive %q", d.Cmd)
	}
	return c.Flush()
}

// bareArg is the directive's first argument when it has no value (a host
// name, a duration).
func (c *Cluster) bareArg(t testing.TB, d *datadriven.TestData) string {
	if len(d.CmdArgs) == 0 || len(d.CmdArgs[0].Vals) > 0 {
		d.Fatalf(t, "%s wants a bare first argument", d.Cmd)
	}
	return d.CmdArgs[0].Key
}

// keyArg reads a block's key given as data=TEXT (the key of that content)
// or key=HEX.
func (c *Cluster) keyArg(t testing.TB, d *datadriven.TestData) id.ID {
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
