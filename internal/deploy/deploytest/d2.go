package deploytest

import (
	"encoding/hex"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"triad/internal/d2"
	"triad/internal/id"
	"triad/internal/node"
	"triad/internal/ring"
	"triad/internal/wire"
)

// D2 in a trace. Hosts run D2 when the cluster's Options.D2 is set (with
// Options.NoRing, D2 alone). add-host's d2=PREFIX places a host's D2 node
// at that position (the position file is written before it first boots,
// as its ring IDs are), and the position prints as the prefix: a D2 node
// prints as host@position ("b@40"), a key as the prefix the script gave it,
// a block as its text, and a content hash as sha("text") of the text a
// script named. A copy's version (wire.D2Store.Version: the engine expiry
// its owner stamped, retention past the put) prints as the time of the
// stamp, "@12.000s", and "+Nns" when the owner stamped one past a version
// it knew (two puts in the same instant), so traces are the same on every
// run.

// d2Directives drive D2: its client API at a host, and views of what the
// hosts hold.
var d2Directives = Directives{
	"d2-put":    {"d2-put from=NAME key=PREFIX data=TEXT [mode=keep|replace|ifabsent|ifhash] [prev=TEXT]", (*Cluster).doD2Put},
	"d2-get":    {"d2-get from=NAME key=PREFIX data=TEXT", (*Cluster).doD2Get},
	"d2-latest": {"d2-latest from=NAME key=PREFIX", (*Cluster).doD2Latest},
	"d2-holds":  {"d2-holds key=PREFIX", (*Cluster).doD2Holds},
	"d2-sync":   {"d2-sync NAME", (*Cluster).doD2Sync},
	"d2-stats":  {"d2-stats NAME", (*Cluster).doD2Stats},
	"d2-peers":  {"d2-peers NAME peers=NAME[,NAME...]", (*Cluster).doD2Peers},
}

// putModes name wire.D2PutMode in scripts and traces.
var putModes = []string{
	wire.D2PutKeep:     "keep",
	wire.D2PutReplace:  "replace",
	wire.D2PutIfAbsent: "ifabsent",
	wire.D2PutIfHash:   "ifhash",
}

// AddD2Host is AddHost for a host whose D2 node starts at pos (its
// first boot only: a restart keeps the position it saved).
func (c *Cluster) AddD2Host(name string, ids []id.ID, pos id.ID, boot node.Addr) (*Host, error) {
	h, err := c.newHost(name, ids, boot)
	if err != nil {
		return nil, err
	}
	// d2.LoadPosition reads the position as a line of hex.
	if err := h.storage.WriteFile(d2.PositionFile, []byte(pos.String()+"\n")); err != nil {
		return nil, err
	}
	return h, c.boot(h)
}

// ParseD2Key reads a D2 key or position written as a hex prefix ("4a" is
// 0x4a00...0, 64 bytes), and remembers the prefix as its label in traces.
func (c *Cluster) ParseD2Key(prefix string) (id.ID, error) {
	prefix = strings.ToLower(prefix)
	x, err := id.Parse(prefix, d2.KeyBytes)
	if err != nil {
		return id.ID{}, fmt.Errorf("deploytest: bad D2 key %q: %w", prefix, err)
	}
	c.labels[x] = prefix
	return x, nil
}

// d2Key reads key=PREFIX.
func (c *Cluster) d2Key(t testing.TB, d *datadriven.TestData) id.ID {
	var prefix string
	d.ScanArgs(t, "key", &prefix)
	k, err := c.ParseD2Key(prefix)
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	return k
}

// text reads name=TEXT and remembers its SHA-256, which then prints as
// sha("TEXT").
func (c *Cluster) text(t testing.TB, d *datadriven.TestData, name string) []byte {
	var s string
	d.ScanArgs(t, name, &s)
	c.sums[string(d2.Sum([]byte(s)))] = s
	return []byte(s)
}

// d2Host is the running host a directive names with from=NAME, which
// must run D2.
func (c *Cluster) d2Host(t testing.TB, d *datadriven.TestData) *Host {
	var from string
	d.ScanArgs(t, "from", &from)
	h := c.hostArg(t, d, from)
	if !h.Up() || h.Node.D2 == nil {
		d.Fatalf(t, "%s is down or runs no D2", h.Name)
	}
	return h
}

// doD2Put puts a block through a host's D2 (Node.Put, as a gateway) and
// prints the copies stored, or the error, when it is done.
func (c *Cluster) doD2Put(t testing.TB, d *datadriven.TestData) {
	h, k, data := c.d2Host(t, d), c.d2Key(t, d), c.text(t, d, "data")
	mode := wire.D2PutKeep
	var name string
	if d.MaybeScanArgs(t, "mode", &name) {
		i := slices.Index(putModes, name)
		if i < 0 {
			d.Fatalf(t, "mode=%s: want one of %s", name, strings.Join(putModes, ", "))
		}
		mode = wire.D2PutMode(i)
	}
	var prev []byte
	label := fmt.Sprintf("%s: d2-put %s %s %s", h.Name, c.ID(k), c.data(data, false), putModes[mode])
	if d.HasArg("prev") {
		prev = d2.Sum(c.text(t, d, "prev"))
		label += " prev=" + c.hash(prev)
	}
	err := c.Do(h, label, func(env node.Env) {
		h.Node.D2.Put(env, k, data, mode, prev, func(env node.Env, copies int, err error) {
			if err != nil {
				c.Logf("  %s: d2-put %s %s failed: %v\n", h.Name, c.ID(k), c.data(data, false), err)
				return
			}
			c.Logf("  %s: d2-put %s %s done: copies=%d\n", h.Name, c.ID(k), c.data(data, false), copies)
		})
	})
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
}

// doD2Get gets the block of a key whose SHA-256 is data's through a host
// and prints it when done.
func (c *Cluster) doD2Get(t testing.TB, d *datadriven.TestData) {
	h, k, data := c.d2Host(t, d), c.d2Key(t, d), c.text(t, d, "data")
	err := c.Do(h, fmt.Sprintf("%s: d2-get %s %s", h.Name, c.ID(k), c.hash(d2.Sum(data))), func(env node.Env) {
		h.Node.D2.Get(env, k, d2.Sum(data), func(env node.Env, got []byte, err error) {
			if err != nil {
				c.Logf("  %s: d2-get %s failed: %v\n", h.Name, c.ID(k), err)
				return
			}
			c.Logf("  %s: d2-get %s done: %s\n", h.Name, c.ID(k), c.data(got, false))
		})
	})
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
}

// doD2Latest asks a host for the greatest key under a prefix (whole bytes
// of hex) and prints it and its bytes when done.
func (c *Cluster) doD2Latest(t testing.TB, d *datadriven.TestData) {
	h := c.d2Host(t, d)
	var s string
	d.ScanArgs(t, "key", &s)
	prefix, err := hex.DecodeString(s)
	if err != nil {
		d.Fatalf(t, "key=%s: a prefix of whole bytes in hex: %v", s, err)
	}
	err = c.Do(h, fmt.Sprintf("%s: d2-latest %s", h.Name, s), func(env node.Env) {
		h.Node.D2.Latest(env, prefix, func(env node.Env, k id.ID, data []byte, found bool, err error) {
			switch {
			case err != nil:
				c.Logf("  %s: d2-latest %s failed: %v\n", h.Name, s, err)
			case !found:
				c.Logf("  %s: d2-latest %s done: none\n", h.Name, s)
			default:
				c.Logf("  %s: d2-latest %s done: key=%s %s\n", h.Name, s, c.ID(k), c.data(data, false))
			}
		})
	})
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
}

// doD2Holds prints what each host's D2 engine holds of a key, read behind
// D2's back (a host that is down keeps its disk): the bytes and their
// version, "older" for a copy older than the newest one held; and a
// pointer a running host holds in place of the block.
func (c *Cluster) doD2Holds(t testing.TB, d *datadriven.TestData) {
	k := c.d2Key(t, d)
	versions := make([]uint64, len(c.hosts))
	datas := make([][]byte, len(c.hosts))
	var newest uint64
	for i, h := range c.hosts {
		if data, meta, err := d2.EngineOf(h.storage).Get(k); err == nil {
			versions[i], datas[i] = uint64(meta.Expiry.UnixNano()), d2.BlockOf(data)
			newest = max(newest, versions[i])
		}
	}
	for i, h := range c.hosts {
		var s string
		switch {
		case datas[i] != nil:
			s = fmt.Sprintf("%s version=%s", c.data(datas[i], false), c.version(versions[i]))
			if versions[i] < newest {
				s += " (older)"
			}
		case h.Up() && h.Node.D2 != nil:
			if _, pointer := h.Node.D2.Holds(k); pointer {
				s = "pointer"
			}
		}
		if s == "" {
			s = "-"
		}
		if !h.Up() {
			s += " (down)"
		}
		c.Logf("%s: %s\n", h.Name, s)
	}
}

// doD2Sync fires the host's pending D2 sync timer now, as if it were due:
// what the round sends stays in flight.
func (c *Cluster) doD2Sync(t testing.TB, d *datadriven.TestData) {
	h := c.HostArg(t, d)
	if !c.FireNow(h, "d2-sync") {
		d.Fatalf(t, "%s has no d2-sync timer pending", h.Name)
	}
}

// doD2Stats prints the host's D2 counters that are not zero, in the order
// they are declared (d2.Stats).
func (c *Cluster) doD2Stats(t testing.TB, d *datadriven.TestData) {
	h := c.HostArg(t, d)
	if !h.Up() || h.Node.D2 == nil {
		d.Fatalf(t, "%s is down or runs no D2", h.Name)
	}
	v := reflect.ValueOf(h.Node.D2.Stats)
	var out []string
	for i := range v.NumField() {
		if n := v.Field(i).Uint(); n > 0 {
			out = append(out, fmt.Sprintf("%s=%d", v.Type().Field(i).Name, n))
		}
	}
	c.Logf("%s: %s\n", h.Name, strings.Join(out, " "))
}

// doD2Peers writes the peers a deployment saved into a host's ring
// state: a host that runs D2 without the ring (which saves them itself)
// joins through them, after its bootstrap, at its next start.
func (c *Cluster) doD2Peers(t testing.TB, d *datadriven.TestData) {
	h := c.HostArg(t, d)
	b, err := h.storage.ReadFile(ring.StateFile)
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	s, err := ring.UnmarshalState(b)
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	s.Peers = nil
	for _, name := range c.listArg(t, d, "peers") {
		p := c.hostArg(t, d, name)
		s.Peers = append(s.Peers, wire.NodeRef{ID: p.ids[0], Addr: p.Name})
	}
	if b, err = ring.MarshalState(s); err == nil {
		err = h.storage.WriteFile(ring.StateFile, b)
	}
	if err != nil {
		d.Fatalf(t, "%v", err)
	}
	c.Logf("%s: saved peers %s\n", h.Name, c.Refs(s.Peers))
}

// FireNow fires h's first pending timer that prints as name now, before
// it is due, and reports whether there was one.
func (c *Cluster) FireNow(h *Host, name string) bool {
	for i, t := range c.timers {
		if t.h == h && t.inc == h.inc && !t.cancelled && t.t.String() == name {
			c.timers = slices.Delete(c.timers, i, i+1)
			t.at = c.now
			c.fire(t)
			return true
		}
	}
	return false
}

// d2Ref prints a D2 node as host@position.
func (c *Cluster) d2Ref(r wire.D2Ref) string {
	if r.IsZero() {
		return "-"
	}
	return r.Node.Addr + "@" + c.ID(r.Pos)
}

// d2Refs prints a list of D2 nodes in brackets.
func (c *Cluster) d2Refs(l []wire.D2Ref) string {
	s := make([]string, len(l))
	for i, r := range l {
		s[i] = c.d2Ref(r)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// hash prints a content hash as sha("TEXT") when a script named the
// text, else its first bytes.
func (c *Cluster) hash(h []byte) string {
	if s, ok := c.sums[string(h)]; ok {
		return fmt.Sprintf("sha(%q)", s)
	}
	if len(h) > 4 {
		h = h[:4]
	}
	return fmt.Sprintf("%x", h)
}

// version prints a copy's version as the time its owner stamped it:
// the version less the retention, since Epoch; "+Nns" past the
// millisecond when the owner stamped one past a version it knew. Zero
// (not said) prints as 0.
func (c *Cluster) version(v uint64) string {
	if v == 0 || c.Options.D2 == nil {
		return fmt.Sprint(v)
	}
	at := time.Duration(int64(v) - Epoch.Add(c.Options.D2.Retention).UnixNano())
	s := "@" + Seconds(at)
	if ns := at % time.Millisecond; ns != 0 {
		s += fmt.Sprintf("+%dns", ns.Nanoseconds())
	}
	return s
}

// d2Line describes h's D2 node: its position, predecessor and successors.
func (c *Cluster) d2Line(h *Host) string {
	n := h.Node.D2
	if !n.Joined() {
		return c.d2Ref(n.Me()) + " joining"
	}
	return fmt.Sprintf("%s pred=%s succs=%s", c.d2Ref(n.Me()), c.d2Ref(n.Pred()), c.d2Refs(n.Succs()))
}

// d2Nodes lists the running hosts' D2 nodes in ring order.
func (c *Cluster) d2Nodes() []*Host {
	var hs []*Host
	for _, h := range c.hosts {
		if h.Up() && h.Node.D2 != nil {
			hs = append(hs, h)
		}
	}
	slices.SortFunc(hs, func(a, b *Host) int { return a.Node.D2.Me().Pos.Cmp(b.Node.D2.Me().Pos) })
	return hs
}

// d2Lines describes every running D2 node in ring order.
func (c *Cluster) d2Lines() []string {
	var out []string
	for _, h := range c.d2Nodes() {
		out = append(out, c.d2Line(h))
	}
	return out
}

// d2Check compares every running D2 node's lists with the ring the
// running D2 nodes form: each must be joined, its predecessor the one
// before it, its successors the next min(r+3, n-1) clockwise.
func (c *Cluster) d2Check() []string {
	hs := c.d2Nodes()
	var bad []string
	for i, h := range hs {
		n := h.Node.D2
		if !n.Joined() {
			bad = append(bad, c.d2Ref(n.Me())+": joining")
			continue
		}
		var want []wire.D2Ref
		for j := 1; j < len(hs) && j <= c.Options.D2.Replicas+3; j++ {
			want = append(want, hs[(i+j)%len(hs)].Node.D2.Me())
		}
		var pred wire.D2Ref
		if len(hs) > 1 {
			pred = hs[(i+len(hs)-1)%len(hs)].Node.D2.Me()
		}
		if n.Pred() != pred {
			bad = append(bad, fmt.Sprintf("%s: pred=%s, want %s", c.d2Ref(n.Me()), c.d2Ref(n.Pred()), c.d2Ref(pred)))
		}
		if got := n.Succs(); !slices.Equal(got, want) {
			bad = append(bad, fmt.Sprintf("%s: succs=%s, want %s", c.d2Ref(n.Me()), c.d2Refs(got), c.d2Refs(want)))
		}
	}
	return bad
}

// formatD2 prints a D2 message's type and the fields that matter in a
// trace; ok is false for another protocol's message.
func (c *Cluster) formatD2(m wire.Msg) (s string, ok bool) {
	t := m.Type().String()
	switch m := m.(type) {
	case *wire.D2Join:
		return fmt.Sprintf("%s self=%s", t, c.d2Ref(m.Self)), true
	case *wire.D2GetNeighbors, *wire.D2Invite, *wire.D2GetSpace:
		return t, true
	case *wire.D2Neighbors:
		return fmt.Sprintf("%s self=%s preds=%s succs=%s links=%s load=%d", t, c.d2Ref(m.Self), c.d2Refs(m.Preds), c.d2Refs(m.Succs), c.d2Refs(m.Links), m.Load), true
	case *wire.D2FindSucc:
		return fmt.Sprintf("%s key=%s", t, c.ID(m.Key)), true
	case *wire.D2Next:
		if m.Done {
			return fmt.Sprintf("%s done owner=%s lo=%s succs=%s", t, c.d2Ref(m.Owner), c.ID(m.Lo), c.d2Refs(m.Succs)), true
		}
		return fmt.Sprintf("%s next=%s", t, c.d2Ref(m.Next)), true
	case *wire.D2Leave:
		return fmt.Sprintf("%s preds=%s succs=%s", t, c.d2Refs(m.Preds), c.d2Refs(m.Succs)), true
	case *wire.D2Store:
		return c.formatD2Store(m), true
	case *wire.D2StoreDone:
		return fmt.Sprintf("%s copies=%d", t, m.Copies) + flag(m.NotMine, " not-mine") + flag(m.Conflict, " conflict"), true
	case *wire.D2Kept:
		return fmt.Sprintf("%s key=%s hash=%s tag=%d", t, c.ID(m.Key), c.hash(m.Hash), m.Tag), true
	case *wire.D2Fetch:
		s = fmt.Sprintf("%s key=%s", t, c.ID(m.Key))
		if len(m.Hash) > 0 {
			s += " hash=" + c.hash(m.Hash)
		}
		return s + flag(m.Local, " local") + flag(m.NoData, " no-data"), true
	case *wire.D2Block:
		s = fmt.Sprintf("%s key=%s", t, c.ID(m.Key))
		if !m.Found {
			return s + " not-found" + flag(m.NotMine, " not-mine"), true
		}
		return fmt.Sprintf("%s %s version=%s", s, c.data(m.Data, false), c.version(m.Version)), true
	case *wire.D2Pointers:
		l := make([]string, len(m.Pointers))
		for i, p := range m.Pointers {
			l[i] = c.ID(p.Key) + ":" + c.Ref(p.Holder)
		}
		return fmt.Sprintf("%s [%s]", t, strings.Join(l, " ")), true
	case *wire.D2Keys:
		s = fmt.Sprintf("%s arc=(%s,%s]", t, c.ID(m.Lo), c.ID(m.Hi))
		if !m.Last {
			s += fmt.Sprintf(" max=%d", m.Max)
		}
		return s + flag(m.Last, " last") + flag(m.Pointers, " pointers"), true
	case *wire.D2KeyList:
		l := make([]string, len(m.Keys))
		for i, k := range m.Keys {
			l[i] = c.ID(k)
			if i < len(m.Versions) {
				l[i] += "(" + c.version(m.Versions[i]) + ")"
			}
		}
		return fmt.Sprintf("%s [%s]", t, strings.Join(l, " ")) + flag(m.More, " more"), true
	case *wire.D2Put:
		return c.formatPut(t, m.Key, m.Data, m.Mode, m.Prev), true
	case *wire.D2Get, *wire.D2Stat:
		return c.formatKeyHash(m), true
	case *wire.D2Delete:
		return fmt.Sprintf("%s key=%s", t, c.ID(m.Key)), true
	case *wire.D2Drop:
		return fmt.Sprintf("%s key=%s", t, c.ID(m.Key)), true
	case *wire.D2Latest:
		return fmt.Sprintf("%s prefix=%x", t, m.Prefix), true
	}
	return "", false
}

// formatD2Store prints a D2Store: a gateway's put for the owner to decide
// (primary, with its mode), or a replica.
func (c *Cluster) formatD2Store(m *wire.D2Store) string {
	t := m.Type().String()
	tag := ""
	if m.ConfirmTo != "" {
		tag = fmt.Sprintf(" tag=%d", m.Tag) // the gateway waits for its D2Kept
	}
	if m.Primary {
		return c.formatPut(t+" primary", m.Key, m.Data, m.Mode, m.Prev) + tag
	}
	s := fmt.Sprintf("%s key=%s %s", t, c.ID(m.Key), c.data(m.Data, false))
	return s + flag(m.Replace, " replace") + " version=" + c.version(m.Version) + tag
}

// formatPut prints a put: key, bytes, mode and the hash it expects.
func (c *Cluster) formatPut(t string, k id.ID, data []byte, mode wire.D2PutMode, prev []byte) string {
	s := fmt.Sprintf("%s key=%s %s", t, c.ID(k), c.data(data, false))
	if int(mode) < len(putModes) {
		s += " " + putModes[mode]
	} else {
		s += fmt.Sprintf(" mode=%d", mode)
	}
	if len(prev) > 0 {
		s += " prev=" + c.hash(prev)
	}
	return s
}

// formatKeyHash prints a D2Get or a D2Stat: the key and the hash asked.
func (c *Cluster) formatKeyHash(m wire.Msg) string {
	switch m := m.(type) {
	case *wire.D2Get:
		return fmt.Sprintf("%s key=%s hash=%s", m.Type(), c.ID(m.Key), c.hash(m.Hash))
	case *wire.D2Stat:
		return fmt.Sprintf("%s key=%s hash=%s", m.Type(), c.ID(m.Key), c.hash(m.Hash))
	}
	return m.Type().String()
}

// flag is s when cond holds, else nothing.
func flag(cond bool, s string) string {
	if cond {
		return s
	}
	return ""
}
