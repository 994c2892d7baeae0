package bench

import (
	"bufio"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"triad/internal/nntp"
)

// fakeDeployment is N news sites of one deployment, on loopback: an
// article taken at a site is listed there at once and announced to the
// others, each of which lists it only after it has answered `lag` more
// GROUPs (so the bench must keep looking), or never if the site drops it.
// It speaks just what the takethis-spread phase sends.
type fakeDeployment struct {
	mu    sync.Mutex
	sites []*fakeSite
}

type fakeSite struct {
	addr      string
	lag       int // GROUPs an announced article waits for
	drop      int // announced articles never listed, the first ones it hears of
	list      []string
	announced []fakeAnnounce
	takethis  int       // TAKETHIS commands taken here
	streams   int       // MODE STREAM connections
	listedAt  time.Time // when the last article was listed
	firstFeed time.Time // the first TAKETHIS
	atFeed    int       // articles it listed at the first TAKETHIS of the deployment
}

type fakeAnnounce struct {
	id   string
	wait int
}

// startFakeDeployment starts one site per lag, each with its own listener.
func startFakeDeployment(t *testing.T, lags, drops []int) *fakeDeployment {
	d := &fakeDeployment{}
	for i, lag := range lags {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		s := &fakeSite{addr: ln.Addr().String(), lag: lag, drop: drops[i]}
		d.sites = append(d.sites, s)
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				go d.serve(s, c)
			}
		}()
	}
	return d
}

// addrs returns the sites' addresses.
func (d *fakeDeployment) addrs() []string {
	var a []string
	for _, s := range d.sites {
		a = append(a, s.addr)
	}
	return a
}

// take lists id at s and announces it to the others.
func (d *fakeDeployment) take(s *fakeSite, id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if s.firstFeed.IsZero() {
		s.firstFeed = time.Now()
		for _, o := range d.sites {
			if o.atFeed == 0 {
				o.atFeed = len(o.list)
			}
		}
	}
	s.takethis++
	s.list, s.listedAt = append(s.list, id), time.Now()
	for _, o := range d.sites {
		switch {
		case o == s:
		case o.drop > 0:
			o.drop--
		case o.lag == 0:
			o.list, o.listedAt = append(o.list, id), time.Now()
		default:
			o.announced = append(o.announced, fakeAnnounce{id, o.lag})
		}
	}
}

// group answers GROUP, first listing the announcements whose wait is over.
func (d *fakeDeployment) group(s *fakeSite, name string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var still []fakeAnnounce
	for _, a := range s.announced {
		if a.wait--; a.wait > 0 {
			still = append(still, a)
			continue
		}
		s.list, s.listedAt = append(s.list, a.id), time.Now()
	}
	s.announced = still
	if len(s.list) == 0 {
		return "211 0 1 0 " + name
	}
	return fmt.Sprintf("211 %d 1 %d %s", len(s.list), len(s.list), name)
}

// over writes the overview lines of numbers lo to hi.
func (d *fakeDeployment) over(s *fakeSite, w *bufio.Writer, lo, hi int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	w.WriteString("224 overview follows\r\n")
	for n := max(lo, 1); n <= min(hi, len(s.list)); n++ {
		fmt.Fprintf(w, "%d\tsubject\tfrom\tdate\t%s\t\t2450\t40\r\n", n, s.list[n-1])
	}
	w.WriteString(".\r\n")
}

func (d *fakeDeployment) serve(s *fakeSite, c net.Conn) {
	defer c.Close()
	r, w := bufio.NewReader(c), bufio.NewWriter(c)
	reply := func(line string) {
		w.WriteString(line + "\r\n")
	}
	reply("200 fake site ready")
	for w.Flush() == nil {
		line, err := nntp.ReadLine(r, nntp.MaxCommandLine)
		if err != nil {
			return
		}
		f := strings.Fields(string(line))
		switch {
		case len(f) == 2 && f[0] == "MODE" && f[1] == "STREAM":
			d.mu.Lock()
			s.streams++
			d.mu.Unlock()
			reply("203 streaming")
		case len(f) == 2 && f[0] == "MODE" && f[1] == "READER":
			reply("200 reader")
		case len(f) == 2 && f[0] == "TAKETHIS":
			if _, err := nntp.ReadArticle(r, nil, 1<<20); err != nil {
				return
			}
			d.take(s, f[1])
			reply("239 " + f[1])
		case len(f) == 2 && f[0] == "GROUP":
			reply(d.group(s, f[1]))
		case len(f) == 2 && f[0] == "OVER":
			lo, hi, _ := strings.Cut(f[1], "-")
			l, err1 := strconv.Atoi(lo)
			h, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil {
				reply("501 bad range")
				continue
			}
			d.over(s, w, l, h)
		case len(f) == 1 && f[0] == "QUIT":
			reply("205 bye")
			w.Flush()
			return
		default:
			reply("500 what")
		}
	}
}

// spreadRun runs only the takethis-spread phase against addrs.
func spreadRun(t *testing.T, d *fakeDeployment, addrs []string, articles int, bound time.Duration) NNTPResult {
	t.Helper()
	res, err := NNTP(NNTPConfig{
		Addr: d.sites[0].addr, SpreadAddrs: addrs, SizeBytes: 600, Articles: articles, Conns: 1,
		Group: "triad.bench", MaxPhase: bound, Phases: []string{"takethis-spread"}, Log: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Phases) != 1 || res.Phases[0].Name != "takethis-spread" || res.Spread == nil {
		t.Fatalf("phases %+v, spread %v", res.Phases, res.Spread)
	}
	return res
}

// TestSpreadWaitsForEverySite feeds three sites at once; the third lists
// what it hears of only after three more GROUPs. The phase must count
// every article, and only once the slowest site listed it: its time runs
// past that site's last listing.
func TestSpreadWaitsForEverySite(t *testing.T) {
	d := startFakeDeployment(t, []int{0, 0, 3}, []int{0, 0, 0})
	// Earlier phases' articles, at site 1 only: the run must wait until
	// every site lists them before it feeds.
	for i := range 4 {
		d.take(d.sites[0], fmt.Sprintf("<before.%d@x>", i))
	}
	d.sites[0].firstFeed, d.sites[0].takethis = time.Time{}, 0
	for _, s := range d.sites {
		s.atFeed = 0
	}

	res := spreadRun(t, d, d.addrs(), 30, 10*time.Second)
	p := res.Phases[0]
	if p.Done != 30 || p.Offered != 30 || p.Failed != 0 || p.Conns != 3 || p.FirstError != "" {
		t.Fatalf("phase %+v", p)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	first, last := d.sites[0].firstFeed, d.sites[0].listedAt
	for i, s := range d.sites {
		if s.takethis != 10 || s.streams != 1 {
			t.Errorf("site %d took %d articles over %d streams, want 10 over 1 (round-robin)", i+1, s.takethis, s.streams)
		}
		if len(s.list) != 34 || len(s.announced) != 0 {
			t.Errorf("site %d lists %d, %d announced: want 34", i+1, len(s.list), len(s.announced))
		}
		if s.atFeed != 4 {
			t.Errorf("site %d listed %d articles when the feed began, want the 4 fed before", i+1, s.atFeed)
		}
		if s.firstFeed.Before(first) {
			first = s.firstFeed
		}
		if s.listedAt.After(last) {
			last = s.listedAt
		}
	}
	if slowest := last.Sub(first).Seconds(); p.Seconds < slowest {
		t.Errorf("phase of %.4f s, but the slowest site listed the last article %.4f s after the first was taken", p.Seconds, slowest)
	}
	if got := float64(p.Done) / p.Seconds; p.OpsPerS != got || p.MBps != float64(30*600)/p.Seconds/1e6 {
		t.Errorf("rates %.1f art/s, %.3f MB/s do not follow from %d in %.4f s", p.OpsPerS, p.MBps, p.Done, p.Seconds)
	}
	sp := res.Spread
	for i, f := range sp.Feeds {
		if f.Addr != d.sites[i].addr || f.Acked != 10 || f.Seconds <= 0 || f.Seconds > p.Seconds {
			t.Errorf("feed %d: %+v in a phase of %.4f s", i, f, p.Seconds)
		}
	}
	if len(sp.Feeds) != 3 || len(sp.Sites) != 3 || sp.Sites[2].Looks < 3 || sp.Sites[2].Missing != 0 || sp.ListedAfterSec < sp.Sites[2].ListedAfterSec {
		t.Errorf("spread %+v", *sp)
	}
}

// TestSpreadCountsOnlyListedEverywhere: a site that never lists two of
// the articles leaves them out of the phase's count, says so, and the
// phase ends at its bound.
func TestSpreadCountsOnlyListedEverywhere(t *testing.T) {
	d := startFakeDeployment(t, []int{0, 1, 0}, []int{0, 0, 2})
	res := spreadRun(t, d, d.addrs(), 30, 300*time.Millisecond)
	p := res.Phases[0]
	if p.Done != 28 || p.Offered != 30 || p.Failed != 0 {
		t.Fatalf("phase %+v: want 28 of 30 done", p)
	}
	want := d.sites[2].addr + " lists 28 of the 30 articles acknowledged"
	if !strings.Contains(p.FirstError, want) {
		t.Errorf("first error %q, want %q", p.FirstError, want)
	}
	sp := res.Spread
	if sp.Sites[2].Missing != 2 || sp.Sites[0].Missing != 0 || sp.Sites[1].Missing != 0 || sp.ListedAfterSec != 0 {
		t.Errorf("spread %+v", *sp)
	}
	if p.Seconds < 0.3 {
		t.Errorf("phase of %.3f s ended before its bound with articles missing", p.Seconds)
	}
}

// TestSpreadOneServer is INN's spread phase: N connections to one server.
func TestSpreadOneServer(t *testing.T) {
	d := startFakeDeployment(t, []int{0}, []int{0})
	a := d.sites[0].addr
	res := spreadRun(t, d, []string{a, a, a}, 31, 10*time.Second)
	p := res.Phases[0]
	d.mu.Lock()
	defer d.mu.Unlock()
	if p.Done != 31 || p.Conns != 3 || d.sites[0].streams != 3 || d.sites[0].takethis != 31 || len(res.Spread.Sites) != 1 {
		t.Fatalf("phase %+v, %d streams, %d taken, spread %+v", p, d.sites[0].streams, d.sites[0].takethis, *res.Spread)
	}
}

func TestOverID(t *testing.T) {
	for line, id := range map[string]string{
		"17\tsubj\tfrom\tdate\t<a@b>\t<ref@x>\t2450\t40": "<a@b>",
		"17\tsubj\tfrom\tdate\t<a@b>":                    "<a@b>",
		"17\tsubj\tfrom\tdate":                           "",
		"":                                               "",
	} {
		if got := overID([]byte(line)); got != id {
			t.Errorf("overID(%q) = %q, want %q", line, got, id)
		}
	}
}
