package deploytest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"triad/internal/dhash"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/wire"
)

// blockDirectives drive the block store (DHash).
var blockDirectives = Directives{
	"put":       {"put from=NAME data=TEXT", (*Cluster).doPut},
	"put-batch": {"put-batch from=NAME data=TEXT,TEXT,...", (*Cluster).doPutBatch},
	"get":       {"get from=NAME (data=TEXT | key=HEX)", (*Cluster).doGet},
	"damage":    {"damage NAME (data=TEXT | key=HEX)", (*Cluster).doDamage},
}

// doPut puts a block from a host and prints its key and holders when done.
func (c *Cluster) doPut(t testing.TB, d *datadriven.TestData) {
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
}

// doPutBatch puts blocks from a host in one batch (dhash.Node.PutBatch,
// a client's ClientPutBatch) and prints each one's key when all are done.
func (c *Cluster) doPutBatch(t testing.TB, d *datadriven.TestData) {
	var from, data string
	d.ScanArgs(t, "from", &from)
	d.ScanArgs(t, "data", &data)
	h := c.hostArg(t, d, from)
	var items []wire.PutItem
	for _, text := range strings.Split(data, ",") {
		items = append(items, wire.PutItem{Data: []byte(text)})
	}
	err := c.Do(h, fmt.Sprintf("%s: put-batch %s", h.Name, data), func(env node.Env) {
		h.Node.Blocks.PutBatch(env, items, wire.RedundancyDefault, func(env node.Env, results []wire.PutResult) {
			for i, r := range results {
				if r.Code != 0 {
					c.Logf("  %s: put %q failed: %s\n", h.Name, items[i].Data, r.Err)
					continue
				}
				c.Logf("  %s: put %q done: key=%s\n", h.Name, items[i].Data, c.ID(r.Key))
			}
		})
	})
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
}

// doGet gets a block, by its content or its key, from a host and prints it
// when done.
func (c *Cluster) doGet(t testing.TB, d *datadriven.TestData) {
	var from string
	d.ScanArgs(t, "from", &from)
	h := c.hostArg(t, d, from)
	key := c.KeyArg(t, d)
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
}

// doDamage damages the host's stored copy of a block, as a bad sector
// would: its next read quarantines it.
func (c *Cluster) doDamage(t testing.TB, d *datadriven.TestData) {
	h := c.HostArg(t, d)
	key := c.KeyArg(t, d)
	if err := c.Damage(h, key); err != nil {
		d.Fatalf(t, "%v", err)
	}
	c.Logf("%s: damaged its copy of %s\n", h.Name, c.ID(key))
}
