package tapclient

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"triad/internal/client"
	"triad/internal/fault"
	"triad/internal/id"
	"triad/internal/tapestry"
	"triad/internal/wire"
)

// CallTimeout bounds a call to a Tapestry node: a route waits up to the
// node's route timeout (10 s by default) for its outcome, and a publish
// for the object's write to the node's disk.
const CallTimeout = 30 * time.Second

// Publish has the node t store data and publish it until ttl has passed
// (0: until unpublished), and returns its key. name names data in the
// errors (a file's name, or - for standard input).
func Publish(ctx context.Context, t client.Target, name string, data []byte, ttl time.Duration) (id.ID, error) {
	if len(data) == 0 {
		return id.ID{}, fmt.Errorf("%s is empty: there is nothing to publish", name)
	}
	if len(data) > wire.MaxTapPayload {
		return id.ID{}, fmt.Errorf("%s is %d bytes: a Tapestry object is at most %d (1 MiB); 'triad put' stores larger files in the DHT, in chunks", name, len(data), wire.MaxTapPayload)
	}
	reply, err := t.Call(ctx, &wire.TapPublish{Data: data, TTLMillis: uint64(ttl / time.Millisecond), App: tapestry.AppDOLR})
	if err != nil {
		return id.ID{}, fmt.Errorf("%s: %w", name, explain(t, err))
	}
	p, err := client.As[*wire.TapPublishDone](t.Addr, reply)
	if err != nil {
		return id.ID{}, err
	}
	return p.Key, nil
}

// Unpublish has the node t stop publishing key.
func Unpublish(ctx context.Context, t client.Target, key id.ID) error {
	_, err := t.Call(ctx, &wire.TapUnpublish{Key: key})
	return explain(t, err)
}

// explain adds to a node's refusal for want of Tapestry how to run it.
func explain(t client.Target, err error) error {
	if errors.Is(err, fault.ErrNoProtocol) {
		return fmt.Errorf("%s runs no Tapestry (start its node with --tapestry): %w", t.Addr, err)
	}
	return err
}

// Locate routes from the node t to the object key: to its nearest server,
// or with all on to its root and every server the root knows. A route
// that reached the root and no server returns its outcome and the
// NotFound error.
func Locate(ctx context.Context, t client.Target, key id.ID, all bool) (*wire.TapLocateDone, error) {
	l, err := client.Ask[*wire.TapLocateDone](ctx, t, &wire.TapLocate{Key: key, All: all, App: tapestry.AppDOLR})
	if err != nil {
		return nil, explain(t, err)
	}
	if !l.Found {
		return l, NotFound(l)
	}
	return l, nil
}

// Fetch routes from the node t to the object key and returns its bytes,
// checked against the key.
func Fetch(ctx context.Context, t client.Target, key id.ID) ([]byte, error) {
	l, err := client.Ask[*wire.TapLocateDone](ctx, t, &wire.TapLocate{Key: key, Fetch: true, App: tapestry.AppDOLR})
	if err != nil {
		return nil, explain(t, err)
	}
	return fetched(key, l)
}

// fetched is the object of a fetch's outcome l, if it is key's.
func fetched(key id.ID, l *wire.TapLocateDone) ([]byte, error) {
	if !l.Found {
		return nil, NotFound(l)
	}
	server := "?"
	if len(l.Servers) > 0 {
		server = l.Servers[0].Addr
	}
	if got := id.Key(l.Data); got != key {
		return nil, fmt.Errorf("%s answered %d bytes whose key is %s, not %s", server, len(l.Data), got, key)
	}
	return l.Data, nil
}

// NotFound is the error of a route that reached the key's root and no
// server.
func NotFound(l *wire.TapLocateDone) error {
	return fmt.Errorf("not found at root %s (%s) after %d hops", l.Root.Addr, l.Root.ID.Short(), l.Hops)
}

// Located is the JSON form of a locate's outcome (triad locate --json):
// one line, also when not found.
type Located struct {
	Key       string   `json:"key"`
	Found     bool     `json:"found"`
	Servers   []string `json:"servers"`
	Root      string   `json:"root"`
	RootID    string   `json:"root_id"`
	Hops      int      `json:"hops"`
	Path      []string `json:"path"`
	LatencyMS float64  `json:"latency_ms"`
}

// LocatedJSON is the JSON form of l, the outcome of locating key: root
// and root_id are empty when the route met a pointer before the root, so
// knows none (--all always reaches it).
func LocatedJSON(key id.ID, l *wire.TapLocateDone) Located {
	j := Located{Key: key.String(), Found: l.Found, Servers: addrs(l.Servers),
		Hops: int(l.Hops), Path: addrs(l.Path), LatencyMS: float64(l.Micros) / 1000}
	if !l.Root.IsZero() {
		j.Root, j.RootID = l.Root.Addr, l.Root.ID.String()
	}
	return j
}

// WriteLocated writes a found object's outcome l as a table: its nearest
// server, or with all every server and the root (a route that met a
// pointer on the way knows no root, so only all names one); then the
// hops, the path and the latency.
func WriteLocated(w io.Writer, l *wire.TapLocateDone, all bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, s := range l.Servers {
		fmt.Fprintf(tw, "server\t%s\t%s\n", s.Addr, s.ID.Short())
		if !all && i == 0 {
			break
		}
	}
	if all {
		fmt.Fprintf(tw, "root\t%s\t%s\n", l.Root.Addr, l.Root.ID.Short())
	}
	fmt.Fprintf(tw, "hops\t%d\n", l.Hops)
	fmt.Fprintf(tw, "path\t%s\n", strings.Join(addrs(l.Path), " -> "))
	fmt.Fprintf(tw, "latency\t%v\n", time.Duration(l.Micros)*time.Microsecond)
	return tw.Flush()
}

// addrs are the addresses of refs.
func addrs(refs []wire.NodeRef) []string {
	out := make([]string, len(refs))
	for i, r := range refs {
		out[i] = r.Addr
	}
	return out
}

// Table asks the node t for its routing table and counters.
func Table(ctx context.Context, t client.Target) (*wire.TapTable, error) {
	tab, err := client.Ask[*wire.TapTable](ctx, t, &wire.TapGetTable{})
	return tab, explain(t, err)
}

// StatusJSON is the JSON form of a node's status (triad tapestry status
// --json): its address, ID, whether it has joined, and its counters by
// name.
func StatusJSON(t *wire.TapTable) map[string]any {
	counters := map[string]uint64{}
	for _, c := range t.Counters {
		counters[c.Name] = c.Value
	}
	return map[string]any{"self": t.Self.Addr, "id": t.Self.ID.String(), "joined": t.Joined, "counters": counters}
}

// WriteStatus writes a node's status: its address, ID and whether it has
// joined, then its counters, one a line.
func WriteStatus(w io.Writer, t *wire.TapTable) error {
	state := "joined"
	if !t.Joined {
		state = "joining"
	}
	fmt.Fprintf(w, "tapestry on %s (%s): %s\n", t.Self.Addr, t.Self.ID, state)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, c := range t.Counters {
		fmt.Fprintf(tw, "  %s\t%d\n", c.Name, c.Value)
	}
	return tw.Flush()
}
