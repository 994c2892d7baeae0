package bench

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"triad/internal/nntp"
)

// The takethis-spread phase: a feed offered at every site of a deployment
// at once, counted only where every site lists it.

// NNTPSpreadHelp is what `triad bench nntp` --help says of the
// takethis-spread phase.
const NNTPSpreadHelp = `

With --spread-addrs A1,A2,...,AN (the news servers of every site of one
deployment), a takethis-spread phase runs last (after the reads, which so
take no article the read site ingested itself): --articles more articles,
fed with TAKETHIS over one connection to each site, all at once, site i
taking articles i, i+N, ... (round-robin). Before it, the run waits
until every site lists what --addr does (earlier phases' announcements);
after the feed, it looks at every site's group every 10 ms (GROUP, then
OVER of the new numbers for the message-ids) until each lists every article
acknowledged, for at most --max-seconds. The phase counts only articles
acknowledged and listed at every site, and its time runs from the first
article sent to the moment the last site was seen listing the last one.
The same address N times (INN, one server) is N feeding connections to it.`

// maxSpreadSites bounds --spread-addrs.
const maxSpreadSites = 64

// NNTPSpread is how the takethis-spread phase's articles became listed at
// every site.
type NNTPSpread struct {
	Addrs []string `json:"addrs"` // one feeding connection to each, in order
	// SettleSec is how long the run waited, before the feed, for every
	// site to list what the earlier phases fed.
	SettleSec float64 `json:"settle_seconds"`
	// ListedAfterSec runs from the last acknowledgement to the moment the
	// last site was seen listing every article acknowledged; 0 when some
	// site did not within the bound.
	ListedAfterSec float64           `json:"listed_after_seconds"`
	Sites          []NNTPSiteListing `json:"sites"` // each distinct address, in the order of Addrs
	Feeds          []NNTPSpreadFeed  `json:"feeds"` // each feeding connection, in the order of Addrs
}

// NNTPSpreadFeed is what one feeding connection of the spread phase did:
// a connection much slower than the others points at its site.
type NNTPSpreadFeed struct {
	Addr    string  `json:"addr"`
	Acked   int     `json:"acked"`
	Seconds float64 `json:"seconds"` // from the phase's first article to this connection's last acknowledgement
	P99Ms   float64 `json:"p99_ms"`  // of its TAKETHIS, command to reply
}

// NNTPSiteListing is one site's listing of the takethis-spread articles.
type NNTPSiteListing struct {
	Addr string `json:"addr"`
	// ListedAfterSec runs from the phase's last acknowledgement to the
	// look that found every article acknowledged listed here.
	ListedAfterSec float64 `json:"listed_after_seconds"`
	Missing        int     `json:"missing"` // articles acknowledged that it did not list within the bound
	Looks          int     `json:"looks"`   // GROUP commands sent
}

// WriteText says how the spread phase was fed and timed, and each site's
// listing.
func (s NNTPSpread) WriteText(w io.Writer) {
	sites := distinct(s.Addrs)
	how := fmt.Sprintf("one TAKETHIS connection to each of %d sites", len(sites))
	if len(sites) < len(s.Addrs) {
		how = fmt.Sprintf("%d TAKETHIS connections to %d server(s): %s", len(s.Addrs), len(sites), strings.Join(sites, ","))
	}
	fmt.Fprintf(w, "takethis-spread: %s, articles split round-robin; counts only articles acknowledged and listed at every site, timed from the first article sent to the moment the last site was seen listing the last (a look every %v after the feed; the sites listed the earlier phases' articles %.3f s before it)\n",
		how, listPoll, s.SettleSec)
	for _, f := range s.Feeds {
		fmt.Fprintf(w, "  feed to %s: %d acknowledged, the last %.3f s after the first article sent; p99 %.3f ms\n", f.Addr, f.Acked, f.Seconds, f.P99Ms)
	}
	for _, l := range s.Sites {
		if l.Missing > 0 {
			fmt.Fprintf(w, "  %s: %d acknowledged articles not listed (%d looks)\n", l.Addr, l.Missing, l.Looks)
		} else {
			fmt.Fprintf(w, "  %s: listed every article %.3f s after the last acknowledgement (%d looks)\n", l.Addr, l.ListedAfterSec, l.Looks)
		}
	}
}

// spread generates cfg.Articles articles of spec and runs the
// takethis-spread phase with them, adding its figures to res.
func (r *nntpRun) spread(res *NNTPResult, spec articleSpec) error {
	arts, err := r.generate(spec, r.cfg.Articles)
	if err != nil {
		return err
	}
	p, sp, err := r.takeThisSpread(arts)
	if err != nil {
		return err
	}
	res.Phases = append(res.Phases, p)
	res.Spread = &sp
	return r.check(p)
}

// distinct returns addrs without repeats, in order.
func distinct(addrs []string) []string {
	var out []string
	for _, a := range addrs {
		if !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// takeThisSpread runs the takethis-spread phase: it waits for every site
// to list what the earlier phases fed, feeds arts to all of
// cfg.SpreadAddrs at once, and waits until every site lists every article
// acknowledged. The phase's Done counts those listed at every site.
func (r *nntpRun) takeThisSpread(arts []*article) (NNTPPhase, NNTPSpread, error) {
	cfg := r.cfg
	sp := NNTPSpread{Addrs: cfg.SpreadAddrs}
	sites := distinct(cfg.SpreadAddrs)
	settle, err := r.waitListed(sites)
	if err != nil {
		return NNTPPhase{}, sp, fmt.Errorf("bench: before takethis-spread: %w", err)
	}
	sp.SettleSec = settle.Seconds()
	ws := make([]*siteWatch, len(sites))
	for i, addr := range sites {
		g, err := r.groupAt(addr)
		if err != nil {
			return NNTPPhase{}, sp, err
		}
		ws[i] = &siteWatch{addr: addr, base: g}
	}

	cpu := startCPU(cfg.CPUPids)
	var stats []connStats
	var t0 time.Time
	p := r.phase("takethis-spread", len(arts), func() NNTPPhase {
		stats, t0 = r.feed(cfg.SpreadAddrs, arts)
		return figures("takethis-spread", true, len(arts), t0, stats)
	})
	lastAck := t0.Add(time.Duration(p.Seconds * float64(time.Second)))
	var acked []*article
	for i, s := range stats {
		acked = append(acked, s.acked...)
		f := NNTPSpreadFeed{Addr: cfg.SpreadAddrs[i], Acked: len(s.acked)}
		if !s.end.IsZero() {
			f.Seconds = s.end.Sub(t0).Seconds()
		}
		slices.Sort(s.lat)
		f.P99Ms = quantileMs(s.lat, 0.99)
		sp.Feeds = append(sp.Feeds, f)
	}
	end, err := r.awaitListing(ws, acked, time.Now().Add(cfg.MaxPhase))
	if err != nil {
		return p, sp, err
	}

	// Only what every site lists counts, up to when the last one did.
	p.Done = 0
	var total int64
	for _, a := range acked {
		if !slices.ContainsFunc(ws, func(w *siteWatch) bool { return w.pending[a.id] }) {
			p.Done++
			total += int64(len(a.wire))
		}
	}
	p.Seconds = end.Sub(t0).Seconds()
	p.OpsPerS, p.MBps = float64(p.Done)/p.Seconds, float64(total)/p.Seconds/1e6
	for _, w := range ws {
		l := NNTPSiteListing{Addr: w.addr, Missing: len(w.pending), Looks: w.looks}
		if l.Missing == 0 {
			l.ListedAfterSec = w.listed.Sub(lastAck).Seconds()
		} else if p.FirstError == "" {
			p.FirstError = fmt.Sprintf("%s lists %d of the %d articles acknowledged %v after the feed", w.addr, len(acked)-l.Missing, len(acked), cfg.MaxPhase)
		}
		sp.Sites = append(sp.Sites, l)
	}
	if p.Done == len(acked) {
		sp.ListedAfterSec = end.Sub(lastAck).Seconds()
	}
	cpu.stop(&p)
	return p, sp, nil
}

// siteWatch follows one site's listing of the articles acknowledged.
type siteWatch struct {
	addr    string
	base    groupInfo // the group before the feed
	c       *nntpConn
	pending map[string]bool // message-ids acknowledged and not yet seen listed
	listed  time.Time       // the look that found the last of them; zero until then
	looks   int
}

// awaitListing looks at every site's group, every listPoll, until each
// lists every article of acked or the deadline passes, and returns when
// the last site was seen listing the last article (the deadline's look,
// if some never did).
func (r *nntpRun) awaitListing(ws []*siteWatch, acked []*article, deadline time.Time) (time.Time, error) {
	var cs []*nntpConn
	defer func() { r.close(cs) }()
	for _, w := range ws {
		c, err := r.readerAt(w.addr, deadline.Add(ioGrace), true, false)
		if err != nil {
			return time.Time{}, err
		}
		cs = append(cs, c)
		w.c = c
		w.pending = make(map[string]bool, len(acked))
		for _, a := range acked {
			w.pending[a.id] = true
		}
	}
	unlisted := func(w *siteWatch) bool { return w.listed.IsZero() }
	for {
		final := time.Now().After(deadline)
		for _, w := range ws {
			if !unlisted(w) {
				continue
			}
			if err := w.look(r.cfg.Group, len(acked), final); err != nil {
				return time.Time{}, err
			}
		}
		switch {
		case !slices.ContainsFunc(ws, unlisted):
			var end time.Time
			for _, w := range ws {
				if w.listed.After(end) {
					end = w.listed
				}
			}
			return end, nil
		case final:
			return time.Now(), nil
		}
		time.Sleep(listPoll)
	}
}

// look sends GROUP and, once the group has grown by n articles since the
// feed began (or when final), OVER of its new numbers, crossing off the
// message-ids listed.
func (w *siteWatch) look(group string, n int, final bool) error {
	w.looks++
	g, err := w.c.selectGroup(group)
	if err != nil {
		return err
	}
	seen := time.Now()
	grown := g.count-w.base.count >= int64(n) || g.high-w.base.high >= int64(n)
	if !grown && !final {
		return nil
	}
	if from := max(w.base.high+1, g.low); g.count > 0 && g.high >= from {
		cmd := fmt.Sprintf("OVER %d-%d", from, g.high)
		if _, err := w.c.Expect(cmd, nntp.CodeOverviewFollows); err != nil {
			return err
		}
		if w.c.block, _, err = w.c.ReadBlock(w.c.block[:0], maxReplyBlockBytes); err != nil {
			return fmt.Errorf("%s at %s: %w", cmd, w.addr, err)
		}
		for line := range bytes.SplitSeq(w.c.block, []byte("\r\n")) {
			if id := overID(line); id != "" {
				delete(w.pending, id)
			}
		}
	}
	if len(w.pending) == 0 {
		w.listed = seen
	}
	return nil
}

// overID is the message-id of an overview line (number, Subject, From,
// Date, Message-ID, ... separated by tabs), or "".
func overID(line []byte) string {
	f := bytes.SplitN(line, []byte("\t"), 6)
	if len(f) < 5 {
		return ""
	}
	return string(f[4])
}
