package client

import (
	"context"
	"fmt"
	"io"
	"strings"

	"triad/internal/id"
	"triad/internal/wire"
)

// Ring asks the node t for its ring info: each vnode's predecessors,
// successors and fingers (triad ring).
func Ring(ctx context.Context, t Target) (*wire.RingInfo, error) {
	return Ask[*wire.RingInfo](ctx, t, &wire.GetRingInfo{})
}

// Lookup has the node t look up key on the ring (triad lookup): the reply
// names the hops and the key's successors, the first responsible for it.
// A lookup the node gave up on is an error.
func Lookup(ctx context.Context, t Target, key id.ID) (*wire.LookupDone, error) {
	done, err := Ask[*wire.LookupDone](ctx, t, &wire.ClientLookup{Key: key})
	if err != nil {
		return nil, err
	}
	if done.Failed != "" {
		return nil, fmt.Errorf("lookup of %s failed: %s", key, done.Failed)
	}
	return done, nil
}

// WriteRing writes a node's ring info as text: each vnode, its
// predecessors and successors by rank, and its fingers by bit.
func WriteRing(w io.Writer, info *wire.RingInfo) error {
	var b strings.Builder
	list := func(name string, refs []wire.NodeRef) {
		fmt.Fprintf(&b, "  %s (%d):\n", name, len(refs))
		for i, n := range refs {
			fmt.Fprintf(&b, "    %-3d %s  %s\n", i, n.ID, n.Addr)
		}
	}
	for _, v := range info.Vnodes {
		fmt.Fprintf(&b, "vnode %s at %s\n", v.Self.ID, v.Self.Addr)
		list("predecessors", v.Preds)
		list("successors", v.Succs)
		fmt.Fprintf(&b, "  fingers (%d):\n", len(v.Fingers))
		for _, f := range v.Fingers {
			fmt.Fprintf(&b, "    2^%-3d %s  %s\n", f.Bit, f.Node.ID, f.Node.Addr)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// RefJSON is the JSON form of a node: its ID and address.
type RefJSON struct {
	ID   string `json:"id"`
	Addr string `json:"addr"`
}

// fingerJSON is the JSON form of a finger.
type fingerJSON struct {
	Bit  uint32  `json:"bit"`
	Node RefJSON `json:"node"`
}

// vnodeJSON is the JSON form of a vnode's ring info.
type vnodeJSON struct {
	Self    RefJSON      `json:"self"`
	Preds   []RefJSON    `json:"predecessors"`
	Succs   []RefJSON    `json:"successors"`
	Fingers []fingerJSON `json:"fingers"`
}

// RefsJSON is the JSON form of a list of nodes: [] if it is empty.
func RefsJSON(list []wire.NodeRef) []RefJSON {
	out := []RefJSON{}
	for _, n := range list {
		out = append(out, RefJSON{n.ID.String(), n.Addr})
	}
	return out
}

// RingJSON is the JSON form of a node's ring info (triad ring --json), for
// scripts and tests: {"vnodes": [...]}, null if it has none.
func RingJSON(info *wire.RingInfo) map[string]any {
	var vs []vnodeJSON
	for _, v := range info.Vnodes {
		vj := vnodeJSON{Self: RefJSON{v.Self.ID.String(), v.Self.Addr}, Preds: RefsJSON(v.Preds), Succs: RefsJSON(v.Succs), Fingers: []fingerJSON{}}
		for _, f := range v.Fingers {
			vj.Fingers = append(vj.Fingers, fingerJSON{f.Bit, RefJSON{f.Node.ID.String(), f.Node.Addr}})
		}
		vs = append(vs, vj)
	}
	return map[string]any{"vnodes": vs}
}
