package deploytest

import (
	"fmt"
	"strings"
	"time"

	"triad/internal/id"
	"triad/internal/merkle"
	"triad/internal/wire"
)

// ID prints x as the prefix the script wrote for it, or its short form.
func (c *Cluster) ID(x id.ID) string {
	if l, ok := c.labels[x]; ok {
		return l
	}
	if x.IsZero() {
		return "-"
	}
	return x.Short()
}

// Ref prints a node reference as addr(id), or addr alone when it names no
// vnode.
func (c *Cluster) Ref(n wire.NodeRef) string {
	if n.IsZero() {
		if n.Addr == "" {
			return "-"
		}
		return n.Addr
	}
	return n.Addr + "(" + c.ID(n.ID) + ")"
}

// Refs prints a list of node references in brackets.
func (c *Cluster) Refs(list []wire.NodeRef) string {
	s := make([]string, len(list))
	for i, n := range list {
		s[i] = c.Ref(n)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// Seconds prints a time since Epoch with millisecond precision.
func Seconds(d time.Duration) string {
	return fmt.Sprintf("%.3fs", d.Seconds())
}

// FormatEnvelope prints a message in flight on one line:
//
//	b(40) -> a  NextHop req=1 key=40 min=0
//
// the sender's vnode (or address), the receiving address (with the
// vnode's ID when the envelope names one), the message with its key
// fields, and its request id (req=, reply=; only the low 32 bits, the
// caller's sequence number, as the rest is random). A sender whose envelope
// names another address, or none ("b/-"), is printed after the host that
// sent it.
func (c *Cluster) FormatEnvelope(m Msg) string {
	e := m.Env
	from := c.Ref(e.From)
	if e.From.Addr != m.From {
		from = m.From + "/" + from // a reply address other than the vnode's
	}
	to := m.To
	if !e.To.IsZero() {
		to += "(" + c.ID(e.To) + ")"
	}
	kind := ""
	switch e.Kind {
	case wire.Request:
		kind = fmt.Sprintf(" req=%d", uint32(e.ReqID))
	case wire.Reply:
		kind = fmt.Sprintf(" reply=%d", uint32(e.ReqID))
	}
	body := c.FormatMsg(e.Msg)
	name, rest, _ := strings.Cut(body, " ")
	if rest != "" {
		rest = " " + rest
	}
	return fmt.Sprintf("%s -> %s  %s%s%s", from, to, name, kind, rest)
}

// FormatMsg prints a message's type and the fields that matter in a
// trace. Messages of protocols it does not know print as their type.
func (c *Cluster) FormatMsg(m wire.Msg) string {
	for _, f := range c.formats {
		if s, ok := f(c, m); ok {
			return s
		}
	}
	if s, ok := c.formatD2(m); ok {
		return s
	}
	t := m.Type().String()
	switch m := m.(type) {
	case *wire.Neighbors:
		return fmt.Sprintf("%s preds=%s succs=%s", t, c.Refs(m.Preds), c.Refs(m.Succs))
	case *wire.Leave:
		return fmt.Sprintf("%s preds=%s succs=%s", t, c.Refs(m.Preds), c.Refs(m.Succs))
	case *wire.Lookup:
		return fmt.Sprintf("%s id=%d key=%s origin=%s min=%d hops=%d", t, m.LookupID, c.ID(m.Key), c.Ref(m.Origin), m.MinSuccs, m.Hops)
	case *wire.LookupDone:
		s := fmt.Sprintf("%s id=%d key=%s hops=%d pred=%s succs=%s", t, m.LookupID, c.ID(m.Key), m.Hops, c.Ref(m.Pred), c.Refs(m.Succs))
		if m.Failed != "" {
			s += fmt.Sprintf(" failed=%q", m.Failed)
		}
		return s
	case *wire.NextHop:
		return fmt.Sprintf("%s key=%s min=%d", t, c.ID(m.Key), m.MinSuccs)
	case *wire.NextHopInfo:
		if m.Done {
			return fmt.Sprintf("%s done succs=%s", t, c.Refs(m.Succs))
		}
		return fmt.Sprintf("%s next=%s", t, c.Refs(m.Next))
	case *wire.StoreBlock:
		return fmt.Sprintf("%s key=%s %s", t, c.ID(m.Key), c.data(m.Data, m.Fragment))
	case *wire.FetchBlock:
		return fmt.Sprintf("%s key=%s", t, c.ID(m.Key))
	case *wire.StatBlock:
		return fmt.Sprintf("%s key=%s", t, c.ID(m.Key))
	case *wire.StoreBlocks:
		blocks := make([]string, len(m.Blocks))
		for i, b := range m.Blocks {
			blocks[i] = c.ID(b.Key) + ":" + c.data(b.Data, b.Fragment)
		}
		return fmt.Sprintf("%s [%s]", t, strings.Join(blocks, " "))
	case *wire.StoresDone:
		results := make([]string, len(m.Results))
		for i, r := range m.Results {
			results[i] = "ok"
			if r.Code != 0 {
				results[i] = fmt.Sprintf("%s(%q)", r.Code, r.Err)
			}
		}
		return fmt.Sprintf("%s [%s]", t, strings.Join(results, " "))
	case *wire.Block:
		return fmt.Sprintf("%s key=%s %s", t, c.ID(m.Key), c.data(m.Data, m.Fragment))
	case *wire.PutDone:
		return fmt.Sprintf("%s key=%s holders=%s", t, c.ID(m.Key), c.Refs(m.Holders))
	case *wire.ClientGet:
		return fmt.Sprintf("%s key=%s", t, c.ID(m.Key))
	case *wire.ClientLookup:
		return fmt.Sprintf("%s key=%s", t, c.ID(m.Key))
	case *wire.Error:
		return fmt.Sprintf("%s %s %q", t, m.Code, m.Text)
	case *wire.TreeQuery:
		return fmt.Sprintf("%s prefix=%s arc=(%s,%s]", t, prefix(m.Prefix), c.ID(m.Lo), c.ID(m.Hi))
	case *wire.TreeInfo:
		s := fmt.Sprintf("%s count=%d", t, m.Count)
		if len(m.Hash) >= 4 {
			s += fmt.Sprintf(" hash=%x", m.Hash[:4])
		}
		if len(m.Keys) > 0 {
			keys := make([]string, len(m.Keys))
			for i, k := range m.Keys {
				keys[i] = c.ID(k)
			}
			s += " keys=[" + strings.Join(keys, " ") + "]"
		}
		if len(m.Children) > 0 {
			kids := make([]string, len(m.Children))
			for i, k := range m.Children {
				kids[i] = fmt.Sprintf("%s:%d", prefix(k.Prefix), k.Count)
			}
			s += " children=[" + strings.Join(kids, " ") + "]"
		}
		return s
	case *wire.Audit:
		return fmt.Sprintf("%s key=%s", t, c.ID(m.Key))
	case *wire.AuditProof:
		return fmt.Sprintf("%s held=%v", t, m.Held)
	}
	return t
}

// Format prints the messages of a protocol that a test registers with
// RegisterFormat: the type's name, then its key fields (ok false: not one
// of its messages).
type Format func(c *Cluster, m wire.Msg) (s string, ok bool)

// RegisterFormat adds f to the formats FormatMsg tries, so that a
// protocol's trace test prints its messages' fields without deploytest
// knowing them (internal/tapestry's does).
func (c *Cluster) RegisterFormat(f Format) { c.formats = append(c.formats, f) }

// Data prints a block's or a payload's bytes: short text as it is, else
// its size.
func (c *Cluster) Data(b []byte) string { return c.data(b, false) }

// data prints a block's payload: short text as it is, else its size.
func (c *Cluster) data(b []byte, fragment bool) string {
	kind := "data"
	if fragment {
		kind = "fragment"
	}
	if !fragment && len(b) <= 32 && isText(b) {
		return fmt.Sprintf("%s=%q", kind, b)
	}
	return fmt.Sprintf("%s=%dB", kind, len(b))
}

func isText(b []byte) bool {
	for _, x := range b {
		if x < ' ' || x > '~' {
			return false
		}
	}
	return true
}

// prefix prints an encoded Merkle tree prefix as depth/bytes ("0/" is the
// root).
func prefix(b []byte) string {
	p, err := merkle.DecodePrefix(b)
	if err != nil {
		return fmt.Sprintf("bad(%x)", b)
	}
	return p.String()
}
