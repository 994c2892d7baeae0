package status

import (
	"context"
	"embed"
	"encoding/binary"
	"fmt"
	"html/template"
	"io/fs"
	"math"
	"net/http"
	"sort"
	"sync/atomic"
	"time"

	"triad/internal/deploy"
	"triad/internal/metrics"
	"triad/internal/node"
	"triad/internal/store"
	"triad/internal/usenet"
	"triad/internal/usenet/nntpd"
	"triad/internal/usenet/peering"
	"triad/internal/wire"
)

//go:embed page.html deployment.html static
var files embed.FS

var deploymentPage = template.Must(template.New("deployment.html").ParseFS(files, "deployment.html"))

var page = template.Must(template.New("page.html").Funcs(template.FuncMap{
	"bytes":  humanBytes,
	"ago":    func(t, now time.Time) string { return now.Sub(t).Round(time.Second).String() },
	"minus1": func(n int) int { return n - 1 },
	"index0": func(rs []wire.NodeRef) *wire.NodeRef {
		if len(rs) == 0 {
			return nil
		}
		return &rs[0]
	},
}).ParseFS(files, "page.html"))

// Sources are where a page's figures come from; any may be nil.
type Sources struct {
	Name  string // what the daemon is: "node 127.0.0.1:4001", "site1"
	Node  func(ctx context.Context) (metrics.NodeSnapshot, error)
	Store func() store.Stats
	Log   *Recorder
	// Deployment, if set, serves the whole deployment at /deployment.
	Deployment *Deployment
	Now        func() time.Time // nil: the wall clock
	news       atomic.Pointer[metrics.News]
}

// SetNews adds a news server's figures to the page (at any time: triad up
// starts its sites after their nodes).
func (src *Sources) SetNews(n *metrics.News) { src.news.Store(n) }

// Handler serves the status page at "/" and its static files under
// "/static/".
func Handler(src *Sources) http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(files, "static")
	mux.Handle("/static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	if src.Deployment != nil {
		mux.HandleFunc("/deployment", src.Deployment.serve(src.Name))
	}
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		v := src.view(ctx)
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if err := page.Execute(w, v); err != nil {
			// Headers are out; the page ends where the error was.
			fmt.Fprintf(w, "<p class=error>%s</p>", template.HTMLEscapeString(err.Error()))
		}
	})
	return mux
}

// view is what the template draws.
type view struct {
	Name      string
	Now       time.Time
	NodeErr   string
	Node      *metrics.NodeSnapshot
	Ring      []ringPoint
	Coords    []coordPoint
	Store     *store.Stats
	Expiry    []expiryRow
	Maint     *wire.MaintStatus
	News      *newsView
	Protocols []protocolView
	Errors    []LogEntry
	HasErrLog bool
	// HasDeployment links the deployment's page.
	HasDeployment bool
}

// ringPoint is a node drawn on the ring: its position on a circle of
// radius 150 around (170, 170).
type ringPoint struct {
	X, Y  float64
	Kind  string // self, succ, pred or finger
	Label string
}

// coordPoint is a node drawn on the map of Vivaldi coordinates.
type coordPoint struct {
	X, Y   float64
	Self   bool
	Label  string
	Height float64
}

type expiryRow struct {
	Within  string
	Objects int
	Bytes   int64
	Share   float64 // of the usage, 0 to 100
}

// protocolView is a protocol's section (Tapestry, D2): its figures, and
// whether it is on its ring (D2's joined), in red when it is not.
type protocolView struct {
	ID, Title         string
	Lead              string
	Joined, HasJoined bool
	Metrics           []node.Metric
}

// protocolViews are the sections of the protocols that report their own
// figures (issue 47: a D2 down on every node, or holding 658 blocks, was
// on no page).
func protocolViews(reports []deploy.Report) []protocolView {
	var out []protocolView
	for _, r := range reports {
		v := protocolView{ID: r.Protocol, Title: protocolTitles[r.Protocol], Metrics: r.Metrics}
		if v.Title == "" {
			v.Title = r.Protocol
		}
		for _, m := range r.Metrics {
			switch m.Name {
			case "joined":
				v.HasJoined, v.Joined = true, m.Value > 0
			case "held":
				v.Lead = fmt.Sprintf("%.0f blocks and pointers held.", m.Value)
			case "links":
				if r.Protocol == "tapestry" {
					v.Lead = fmt.Sprintf("%.0f routing table links.", m.Value)
				}
			}
		}
		out = append(out, v)
	}
	return out
}

var protocolTitles = map[string]string{"tapestry": "Tapestry", "d2": "D2"}

type newsView struct {
	Stats    nntpd.Stats
	Ingested uint64
	Read     uint64
	Deferred uint64
	Cache    *usenet.CacheStats
	HitRate  float64
	Peers    []peering.PeerStatus
}

func (src *Sources) view(ctx context.Context) view {
	now := time.Now()
	if src.Now != nil {
		now = src.Now()
	}
	v := view{Name: src.Name, Now: now, HasDeployment: src.Deployment != nil}
	if src.Node != nil {
		snap, err := src.Node(ctx)
		if err != nil {
			v.NodeErr = err.Error()
		} else {
			v.Node = &snap
			v.Ring = ringPoints(snap)
			v.Coords = coordPoints(snap)
			v.Maint = snap.Maint
			v.Protocols = protocolViews(snap.Protocols)
		}
	}
	if src.Store != nil {
		st := src.Store()
		v.Store = &st
		for i, b := range st.ByExpiry {
			row := expiryRow{Within: metrics.ExpiryLabels[i], Objects: st.ObjectsByExpiry[i], Bytes: b}
			if st.Usage > 0 {
				row.Share = 100 * float64(b) / float64(st.Usage)
			}
			v.Expiry = append(v.Expiry, row)
		}
	}
	if n := src.news.Load(); n != nil {
		v.News = newsOf(n)
	}
	if src.Log != nil {
		v.HasErrLog = true
		v.Errors = src.Log.Recent()
	}
	return v
}

func newsOf(n *metrics.News) *newsView {
	st := n.Server.Stats()
	nv := &newsView{Stats: st}
	for code, c := range st.Replies {
		switch code {
		case 235, 239, 240:
			nv.Ingested += c
		case 220, 221, 222:
			nv.Read += c
		case 431, 436:
			nv.Deferred += c
		}
	}
	if n.Cache != nil {
		cs := n.Cache.Stats()
		nv.Cache = &cs
		if cs.Hits+cs.Misses > 0 {
			nv.HitRate = 100 * float64(cs.Hits) / float64(cs.Hits+cs.Misses)
		}
	}
	if n.Feeds != nil {
		nv.Peers = n.Feeds.Status()
	}
	return nv
}

// ringAngle is where an ID sits on the ring, in radians from the top,
// clockwise.
func ringAngle(r wire.NodeRef) float64 {
	var b [8]byte
	copy(b[:], r.ID.Bytes())
	return 2 * math.Pi * float64(binary.BigEndian.Uint64(b[:])) / math.Exp2(64)
}

func ringPoints(s metrics.NodeSnapshot) []ringPoint {
	var pts []ringPoint
	seen := map[string]bool{}
	add := func(r wire.NodeRef, kind string) {
		key := r.ID.String()
		if r.ID.IsZero() || seen[key] {
			return
		}
		seen[key] = true
		a := ringAngle(r)
		pts = append(pts, ringPoint{X: 170 + 150*math.Sin(a), Y: 170 - 150*math.Cos(a), Kind: kind,
			Label: fmt.Sprintf("%s %s (%s)", kind, r.ID.Short(), r.Addr)})
	}
	// A node drawn once, in the first role of: self, successor,
	// predecessor, finger. With many vnodes each neighbour is one vnode's
	// successor and another's predecessor: successors first, or every
	// other vnode was drawn as a predecessor (issue 47).
	for _, v := range s.Vnodes {
		add(v.Self, "self")
	}
	for _, v := range s.Vnodes {
		for _, r := range v.Succs {
			add(r, "succ")
		}
	}
	for _, v := range s.Vnodes {
		for _, r := range v.Preds {
			add(r, "pred")
		}
	}
	for _, v := range s.Vnodes {
		for _, r := range v.Fingers {
			add(r, "finger")
		}
	}
	return pts
}

// coordPoints scales the coordinates known to a 340 by 340 square.
func coordPoints(s metrics.NodeSnapshot) []coordPoint {
	type pt struct {
		addr string
		c    wire.Coord
		self bool
	}
	all := []pt{{s.Addr, s.Coord, true}}
	for addr, c := range s.PeerCoords {
		if addr != s.Addr {
			all = append(all, pt{addr, c, false})
		}
	}
	sort.Slice(all[1:], func(i, j int) bool { return all[1+i].addr < all[1+j].addr })
	minX, maxX, minY, maxY := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, p := range all {
		minX, maxX = math.Min(minX, p.c.X), math.Max(maxX, p.c.X)
		minY, maxY = math.Min(minY, p.c.Y), math.Max(maxY, p.c.Y)
	}
	span := math.Max(math.Max(maxX-minX, maxY-minY), 1e-9)
	out := make([]coordPoint, 0, len(all))
	for _, p := range all {
		out = append(out, coordPoint{X: 20 + 300*(p.c.X-minX)/span, Y: 20 + 300*(p.c.Y-minY)/span, Self: p.self,
			Label: fmt.Sprintf("%s: (%.1f, %.1f) ms, height %.1f ms", p.addr, p.c.X, p.c.Y, p.c.Height), Height: p.c.Height})
	}
	return out
}

// humanBytes writes n bytes in the largest unit that keeps it at least 1.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
