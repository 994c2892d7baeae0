package survey

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"triad/internal/client"
	"triad/internal/pki"
	"triad/internal/usenet/newsadmin"
	"triad/internal/wire"
)

// Options say where to start and how long to wait.
type Options struct {
	Addr   string // any node of the ring
	TLSDir string // the operator's bundle, with TLS
	// Bundle, if set, is the bundle to use instead of TLSDir's (a
	// daemon's own, for its deployment page: the requests asked are any
	// client's).
	Bundle *pki.Bundle
	// Site is a news site's address for triad news (with TLS its TLS
	// listener): its feeds, and those of every site it feeds, are
	// surveyed too. Empty: the Local sites, if any.
	Site string
	// Local, without Site, gives the news sites running in this process
	// (triad up's, for its nodes' deployment pages), as they are: a
	// node's own certificate may not ask a site for its feeds.
	Local func() []Site
	// Known are nodes to ask besides those the walk finds: those that
	// answered an earlier survey (Report.Answered; --watch), so that one
	// killed since is still asked, and named down.
	Known []string
	// Timeout bounds each request (3 s).
	Timeout time.Duration
	// Deadline bounds the whole survey (20 s): a chain of nodes each
	// naming one more cannot hold it longer.
	Deadline time.Duration
	// MaxNodes bounds the walk (256).
	MaxNodes int
	// Now is the clock (time.Now).
	Now func() time.Time
}

// Report is one survey.
type Report struct {
	At       time.Time `json:"at"`
	Nodes    []Node    `json:"nodes"`
	Sites    []Site    `json:"sites,omitempty"`
	Problems []string  `json:"problems"`
}

// Node is one node's state.
type Node struct {
	Addr          string    `json:"addr"`
	Up            bool      `json:"up"`
	Error         string    `json:"error,omitempty"`
	Version       string    `json:"version,omitempty"`
	UptimeS       float64   `json:"uptime_s,omitempty"`
	DiskFree      uint64    `json:"disk_free_bytes,omitempty"`
	DiskTotal     uint64    `json:"disk_total_bytes,omitempty"`
	Vnodes        int       `json:"vnodes"`
	MinSuccessors int       `json:"min_successors"`
	Maint         *Maint    `json:"maintenance,omitempty"`
	D2            *D2       `json:"d2,omitempty"`
	Tapestry      *Tapestry `json:"tapestry,omitempty"`
}

// Maint is a node's maintenance (Passing Tone).
type Maint struct {
	Paused bool `json:"paused"`
	// LastRoundAgo is the seconds since the newest round of any of its
	// vnodes ended; -1 before the first.
	LastRoundAgo float64 `json:"last_round_s_ago"`
	Queued       uint64  `json:"queued_fetches"`
}

// D2 is a node's D2.
type D2 struct {
	Joined     bool     `json:"joined"`
	Usage      uint64   `json:"usage_bytes"`
	Capacity   uint64   `json:"capacity_bytes"`
	Primary    uint64   `json:"primary_keys"`
	Held       uint64   `json:"held_keys"`
	Distrusted []string `json:"distrusted,omitempty"`
}

// Tapestry is a node's Tapestry.
type Tapestry struct {
	Joined bool `json:"joined"`
	Links  int  `json:"links"`
}

// Site is a news site's feeds.
type Site struct {
	Name  string   `json:"name"`
	Addr  string   `json:"addr"`
	Up    bool     `json:"up"`
	Error string   `json:"error,omitempty"`
	Feeds []string `json:"feeds,omitempty"`
}

// staleRound is how long a node may go without a maintenance round
// before that needs the operator: many of its intervals.
const staleRound = 15 * time.Minute

// Take surveys the deployment.
func Take(ctx context.Context, o Options) (Report, error) {
	if o.Timeout <= 0 {
		o.Timeout = 3 * time.Second
	}
	if o.MaxNodes <= 0 {
		o.MaxNodes = 256
	}
	if o.Deadline <= 0 {
		o.Deadline = 20 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, o.Deadline)
	defer cancel()
	if o.Now == nil {
		o.Now = time.Now
	}
	r := Report{At: o.Now()}
	nodes, err := walk(ctx, o)
	if err != nil {
		return r, err
	}
	var wg sync.WaitGroup
	for i := range nodes {
		if nodes[i].Up {
			wg.Add(1)
			go func() { defer wg.Done(); o.protocols(ctx, &nodes[i]) }()
		}
	}
	wg.Wait()
	r.Nodes = nodes
	switch {
	case o.Site != "":
		r.Sites = o.sites()
	case o.Local != nil:
		r.Sites = o.Local()
	}
	r.Problems = problems(r)
	return r, nil
}

// maxNamedPerNode bounds the addresses one node's answers add to the
// walk: a hostile node naming thousands cannot fill it alone.
const maxNamedPerNode = 64

// walk finds the nodes from o.Addr (and o.Known) and asks each for its
// ring state: up, its vnodes and their successors. Each address is asked
// once, at most MaxNodes in all, at most maxNamedPerNode new ones from
// each node's answers.
func walk(ctx context.Context, o Options) ([]Node, error) {
	found := map[string]*Node{}
	named := map[string]bool{}
	var queue []string
	enqueue := func(addrs []string, budget int) {
		for _, a := range addrs {
			if budget == 0 || len(named) >= o.MaxNodes {
				return
			}
			if a != "" && !named[a] {
				named[a] = true
				queue = append(queue, a)
				budget--
			}
		}
	}
	enqueue(append([]string{o.Addr}, o.Known...), o.MaxNodes)
	for len(queue) > 0 {
		batch := queue
		queue = nil
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, addr := range batch {
			n := &Node{Addr: addr}
			found[addr] = n
			wg.Add(1)
			go func() {
				defer wg.Done()
				info, err := ask[*wire.RingInfo](ctx, o, addr, &wire.GetRingInfo{})
				var self *wire.NodeInfo
				if err == nil {
					self, _ = ask[*wire.NodeInfo](ctx, o, addr, &wire.GetNodeInfo{}) // nil from a node too old to answer
				}
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					n.Error = err.Error()
					return
				}
				var seen []string
				if self != nil {
					n.Version, n.DiskFree, n.DiskTotal = self.Version, self.DiskFree, self.DiskTotal
					if self.Started > 0 {
						n.UptimeS = o.Now().Sub(time.Unix(0, self.Started)).Seconds()
					}
					// The peers it holds dead: asked too, so that a node
					// its neighbours have already dropped is still named.
					seen = append(seen, self.Dead...)
				}
				n.Up, n.Vnodes, n.MinSuccessors = true, len(info.Vnodes), -1
				for _, v := range info.Vnodes {
					if n.MinSuccessors < 0 || len(v.Succs) < n.MinSuccessors {
						n.MinSuccessors = len(v.Succs)
					}
					for _, refs := range [][]wire.NodeRef{v.Succs, v.Preds} {
						for _, ref := range refs {
							seen = append(seen, ref.Addr)
						}
					}
					for _, f := range v.Fingers {
						seen = append(seen, f.Node.Addr)
					}
				}
				enqueue(seen, maxNamedPerNode)
			}()
		}
		wg.Wait()
	}
	first := found[o.Addr]
	if !first.Up {
		return nil, fmt.Errorf("%s, the node to start from, does not answer: %s", o.Addr, first.Error)
	}
	out := make([]Node, 0, len(found))
	for _, n := range found {
		out = append(out, *n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out, nil
}

// protocols asks an up node about its maintenance, D2 and Tapestry; a
// protocol it does not run is left nil.
func (o Options) protocols(ctx context.Context, n *Node) {
	if st, err := ask[*wire.MaintStatus](ctx, o, n.Addr, &wire.GetMaintStatus{}); err == nil {
		m := &Maint{Paused: st.Paused, LastRoundAgo: -1}
		var newest int64
		for _, v := range st.Vnodes {
			newest = max(newest, v.LastRound)
			m.Queued += v.Queued
		}
		if newest > 0 {
			m.LastRoundAgo = o.Now().Sub(time.Unix(0, newest)).Seconds()
		}
		n.Maint = m
	}
	if sp, err := ask[*wire.D2Space](ctx, o, n.Addr, &wire.D2GetSpace{}); err == nil {
		n.D2 = &D2{Joined: sp.Joined, Usage: sp.Usage, Capacity: sp.Capacity, Primary: sp.Primary, Held: sp.Held, Distrusted: sp.Distrusted}
	}
	if tab, err := ask[*wire.TapTable](ctx, o, n.Addr, &wire.TapGetTable{}); err == nil {
		n.Tapestry = &Tapestry{Joined: tab.Joined, Links: len(tab.Entries)}
	}
}

// ask sends one request to the node at addr, within o.Timeout.
func ask[R wire.Msg](ctx context.Context, o Options, addr string, m wire.Msg) (R, error) {
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	if o.Bundle != nil {
		var r R
		reply, err := client.Call(ctx, addr, m, client.Options{TLS: o.Bundle})
		if err != nil {
			return r, err
		}
		return client.As[R](addr, reply)
	}
	return client.Ask[R](ctx, client.Target{Addr: addr, TLSDir: o.TLSDir}, m)
}

// sites asks the site at o.Site, and each site it feeds, for its feeds.
func (o Options) sites() []Site {
	var b *pki.Bundle
	if o.TLSDir != "" {
		var err error
		if b, err = pki.LoadBundle(o.TLSDir); err != nil {
			return []Site{{Addr: o.Site, Error: err.Error()}}
		}
	}
	first := o.site(o.Site, "", b)
	out := []Site{first}
	if !first.Up {
		return out
	}
	c, err := newsadmin.Dial(o.Site, "", b)
	if err != nil {
		return out
	}
	peers, err := c.Peers()
	c.Close()
	if err != nil {
		return out
	}
	for _, p := range peers {
		name := p.Name
		if b == nil {
			name = ""
		}
		s := o.site(p.Addr, name, b)
		s.Name = p.Name
		out = append(out, s)
	}
	return out
}

// site asks one site for its feeds.
func (o Options) site(addr, name string, b *pki.Bundle) Site {
	s := Site{Addr: addr, Name: name}
	c, err := newsadmin.Dial(addr, name, b)
	if err != nil {
		s.Error = err.Error()
		return s
	}
	defer c.Close()
	if c.Name != "" {
		s.Name = c.Name
	}
	s.Up = true
	if s.Feeds, err = c.Lines("XFEEDS"); err != nil && !errors.Is(err, newsadmin.ErrNoFeeds) {
		s.Error = err.Error()
	}
	return s
}

// backlogNeedsLooking is the articles waiting for a peer past which a
// feed needs the operator.
const backlogNeedsLooking = 1000

// problems are what needs the operator, worst first: nodes down, then
// the rest.
func problems(r Report) []string {
	var down, rest []string
	total := 0
	for _, n := range r.Nodes {
		total += n.Vnodes
	}
	for _, n := range r.Nodes {
		if !n.Up {
			down = append(down, fmt.Sprintf("node %s is down (%s)", n.Addr, firstLine(n.Error)))
			continue
		}
		if n.DiskTotal > 0 && n.DiskFree < n.DiskTotal/20 {
			rest = append(rest, fmt.Sprintf("node %s: its disk is %.0f%% full", n.Addr, 100-100*float64(n.DiskFree)/float64(n.DiskTotal)))
		}
		if total > 2 && n.MinSuccessors < 2 {
			rest = append(rest, fmt.Sprintf("node %s: a vnode has %d successors (the ring is not stable)", n.Addr, n.MinSuccessors))
		}
		if m := n.Maint; m != nil && !m.Paused && m.LastRoundAgo > staleRound.Seconds() {
			rest = append(rest, fmt.Sprintf("node %s: no maintenance round for %s", n.Addr, time.Duration(m.LastRoundAgo*float64(time.Second)).Round(time.Second)))
		}
		if d := n.D2; d != nil {
			if !d.Joined {
				rest = append(rest, fmt.Sprintf("node %s: D2 is not on its ring", n.Addr))
			}
			for _, p := range d.Distrusted {
				rest = append(rest, fmt.Sprintf("node %s: D2 distrusts %s (possession audits failed)", n.Addr, p))
			}
		}
		if t := n.Tapestry; t != nil && !t.Joined {
			rest = append(rest, fmt.Sprintf("node %s: Tapestry has not joined", n.Addr))
		}
	}
	for _, s := range r.Sites {
		if !s.Up {
			down = append(down, fmt.Sprintf("site %s is down (%s)", newsadmin.SiteLabel(s.Name, s.Addr), firstLine(s.Error)))
			continue
		}
		for _, f := range s.Feeds {
			if p := feedProblem(f); p != "" {
				rest = append(rest, fmt.Sprintf("site %s: %s", newsadmin.SiteLabel(s.Name, s.Addr), p))
			}
		}
	}
	return append(down, rest...)
}

// feedProblem is what is wrong with one XFEEDS line, "" for nothing: a
// feed that is down or held with articles waiting, or one far behind.
func feedProblem(line string) string {
	f := strings.Fields(line)
	if len(f) < 5 {
		return ""
	}
	var backlog uint64
	fmt.Sscanf(strings.TrimPrefix(f[4], "backlog="), "%d", &backlog)
	state := f[3]
	switch {
	case strings.Contains(state, "paused") && backlog > 0:
		return fmt.Sprintf("the feed to %s is held with %d articles waiting", f[0], backlog)
	case strings.HasPrefix(state, "down") && backlog > 0:
		return fmt.Sprintf("the feed to %s is down with %d articles waiting", f[0], backlog)
	case backlog > backlogNeedsLooking:
		return fmt.Sprintf("the feed to %s has %d articles waiting", f[0], backlog)
	}
	return ""
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// Answered adds to known the nodes of r that answered, for the next
// survey's Known: a node that never answered (a name a node made up, or
// one dead before the first survey) is not carried on.
func (r Report) Answered(known []string) []string {
	out := slices.Clone(known)
	for _, n := range r.Nodes {
		if n.Up && !slices.Contains(out, n.Addr) {
			out = append(out, n.Addr)
		}
	}
	if len(out) > maxKnown {
		out = out[len(out)-maxKnown:] // the oldest go first
	}
	return out
}

// maxKnown bounds Answered's list.
const maxKnown = 256
