package bench

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"triad/internal/nntp"
	"triad/internal/stats"
)

// The NNTP load generator: it feeds generated articles to any NNTP server
// (triad's or INN) and reads them back, with the shapes of the INN anchor's
// nntpbench.py (../shared/anchors/inn2), so the figures of both servers can
// sit in one table. It is a client only; it talks to loopback addresses only.

// NNTPPhases lists every phase of the NNTP benchmark, in the order they run.
const NNTPPhases = "takethis,post,article,body,over,plain,takethis-spread"

// NNTPConfig is one run of the NNTP load generator against a running server.
type NNTPConfig struct {
	Addr string // the server's host:port; must be on loopback
	// ReadAddr, if set, is the server the read phases (article, body,
	// over, plain) go to: another site of the same ring, which lists
	// what Addr took once it is announced. The run waits (up to
	// MaxPhase) until it lists as many articles as Addr does.
	ReadAddr string
	// SpreadAddrs, if set, are the news servers of every site of one
	// deployment, and the takethis-spread phase feeds a second set of
	// Articles articles to all of them at once (see NNTPSpreadHelp). The
	// same address N times is one server fed from N connections.
	SpreadAddrs []string
	PostConns   []int         // posting connections of the post phase, each count a phase of its own; nil means 1
	SizeBytes   int           // wire size of every article: headers, dot-stuffed body and terminating line
	Articles    int           // articles fed with TAKETHIS and read back; a fifth as many are POSTed
	Conns       int           // TAKETHIS connections
	Window      int           // TAKETHIS commands in flight per connection; zero means 64
	Group       string        // the newsgroup articles go to and are read from; must exist on the server
	MaxPhase    time.Duration // bound of every single phase (one verb at one connection count)
	Phases      []string      // which of NNTPPhases to run; nil means all
	ReadBy      string        // "number" (ARTICLE 17 after GROUP, the default) or "id" (ARTICLE <message-id>)
	User        string        // AUTHINFO USER on every connection when set
	Pass        string        // AUTHINFO PASS, when the server asks for it (381)
	Seed        uint64        // article text; message-ids are unique per run whatever the seed
	// CPUPids are server processes whose CPU time (user and system, from
	// /proc) the ingest phases divide by the articles they took: what
	// each article cost the servers, beside what it cost this client.
	CPUPids []int
	Log     func(format string, args ...any)
	// Progress, if set, receives each phase's advance (a terminal's bar).
	Progress func(phase string, total int64) Progress
}

// Bounds of the NNTP benchmark.
const (
	MaxNNTPArticleBytes = 16 << 20 // largest --size
	MaxNNTPRunBytes     = 4 << 30  // largest Articles × SizeBytes held in memory
	nntpWindow          = 64       // TAKETHIS in flight per connection, as the anchor
	binaryFromBytes     = 16 << 10 // larger articles get base64 bodies, smaller ones text
	plainSeconds        = 5        // the plain reader's bound, as the anchor's
	overRepeats         = 5
	maxReplyBlockBytes  = 256 << 20 // largest ARTICLE, BODY or OVER reply read
	ioGrace             = 10 * time.Second
	listPoll            = 10 * time.Millisecond // between two looks at a site's listing
)

// nntpReadConns are the reader connection counts of the ARTICLE and BODY
// phases, as the anchor's.
var nntpReadConns = [...]int{1, 4, 16}

// Validate reports the first problem with c, an address that is not on
// loopback among them.
func (c NNTPConfig) Validate() error {
	if c.ReadAddr != "" {
		if err := checkLoopback(c.ReadAddr); err != nil {
			return err
		}
	}
	if len(c.SpreadAddrs) > maxSpreadSites {
		return fmt.Errorf("bench: %d spread addresses: at most %d", len(c.SpreadAddrs), maxSpreadSites)
	}
	for _, a := range c.SpreadAddrs {
		if err := checkLoopback(a); err != nil {
			return err
		}
	}
	for _, n := range c.PostConns {
		if n < 1 || n > 256 {
			return fmt.Errorf("bench: %d posting connections: want 1 to 256", n)
		}
	}
	if err := checkLoopback(c.Addr); err != nil {
		return err
	}
	switch {
	case c.SizeBytes < 1 || c.SizeBytes > MaxNNTPArticleBytes:
		return fmt.Errorf("bench: article size must be 1 byte to %d MiB", MaxNNTPArticleBytes>>20)
	case c.Articles < 1:
		return errors.New("bench: articles must be at least 1")
	case int64(c.Articles)*int64(c.SizeBytes) > MaxNNTPRunBytes:
		return fmt.Errorf("bench: %d articles of %d bytes would not fit the %d GiB the generator may hold", c.Articles, c.SizeBytes, MaxNNTPRunBytes>>30)
	case c.Conns < 1 || c.Conns > 256:
		return errors.New("bench: conns must be 1 to 256")
	case c.Window < 0 || c.Window > 4096:
		return errors.New("bench: window must be 0 to 4096")
	case c.MaxPhase <= 0:
		return errors.New("bench: the phase bound must be positive")
	case c.ReadBy != "" && c.ReadBy != "number" && c.ReadBy != "id":
		return fmt.Errorf("bench: read by %q: want number or id", c.ReadBy)
	case c.Pass != "" && c.User == "":
		return errors.New("bench: a password needs a user")
	}
	if strings.ContainsAny(c.Group, " \t\r\n,") || c.Group == "" {
		return fmt.Errorf("bench: bad group name %q", c.Group)
	}
	spec := articleSpec{group: c.Group, tag: "triad.1234567890.12345678", sizeBytes: c.SizeBytes}
	if least := len(spec.head("<"+spec.tag+".post.99999@bench.invalid>", 99999, 0)) + len(".\r\n"); c.SizeBytes < least {
		return fmt.Errorf("bench: articles of %d bytes cannot hold their headers: at least %d", c.SizeBytes, least)
	}
	for _, p := range c.Phases {
		if !slices.Contains(strings.Split(NNTPPhases, ","), p) {
			return fmt.Errorf("bench: unknown phase %q (phases: %s)", p, NNTPPhases)
		}
	}
	for _, pid := range c.CPUPids {
		if pid < 1 {
			return fmt.Errorf("bench: bad process id %d", pid)
		}
	}
	if c.ReadBy == "id" && c.runs("article", "body", "plain") && !c.runs("takethis", "post") {
		return errors.New("bench: reading by message-id needs the takethis or post phase in the same run")
	}
	return nil
}

// runs reports whether any of the phases is selected.
func (c NNTPConfig) runs(phases ...string) bool {
	if c.Phases == nil {
		return true
	}
	for _, p := range phases {
		if slices.Contains(c.Phases, p) {
			return true
		}
	}
	return false
}

// checkLoopback accepts a host:port whose host is, or resolves only to,
// loopback addresses (127.0.0.0/8, ::1): the benchmark is a load
// generator and must not be pointed at another machine.
func checkLoopback(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("bench: address %q: %w", addr, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("bench: address %q: bad port", addr)
	}
	ips := []net.IP{net.ParseIP(host)}
	if ips[0] == nil {
		if ips, err = net.LookupIP(host); err != nil {
			return fmt.Errorf("bench: address %q: %w", addr, err)
		}
	}
	for _, ip := range ips {
		if !ip.IsLoopback() {
			return fmt.Errorf("bench: refusing %s: %s is not a loopback address (127.0.0.0/8 or ::1)", addr, ip)
		}
	}
	return nil
}

// NNTPPhase is the figures of one phase (MB are 10^6 bytes of article wire
// text, as the server sent or received it). Done counts articles accepted
// (239, 240) or read (220, 222); Failed counts every other reply, Rejected
// those among them that refused or missed an article (439, 441, 423, 430).
type NNTPPhase struct {
	Name     string `json:"name"` // takethis, post, article, body or plain
	Conns    int    `json:"conns"`
	QuickAck bool   `json:"quickack"` // TCP_QUICKACK re-armed before every read
	Offered  int    `json:"offered"`  // articles to send or read; those past the bound are neither done nor failed
	Rejected int    `json:"rejected"`
	// Checked counts reads whose body was compared, byte for byte, with
	// the one this run sent.
	Checked    int    `json:"checked"`
	FirstError string `json:"first_error,omitempty"`
	// With CPUPids, for takethis and post: CPU microseconds per article
	// done, of the watched servers together and of this load generator.
	ServerCPUUs float64 `json:"server_cpu_us,omitempty"`
	ClientCPUUs float64 `json:"client_cpu_us,omitempty"`
	PhaseResult
}

// NNTPOver is the figures of OVER of the whole group.
type NNTPOver struct {
	Lines         int     `json:"lines"`
	Bytes         int     `json:"bytes"`
	Repeats       int     `json:"repeats"`
	MedianSeconds float64 `json:"median_seconds"`
	LinesPerS     float64 `json:"lines_per_sec"`
	MBps          float64 `json:"mbps"`
}

// NNTPResult holds a run's figures.
type NNTPResult struct {
	Addr      string      `json:"addr"`
	Greeting  string      `json:"greeting"`
	Group     string      `json:"group"`
	SizeBytes int         `json:"size_bytes"`
	Articles  int         `json:"articles"`
	ReadBy    string      `json:"read_by"`
	Phases    []NNTPPhase `json:"phases"`
	Over      *NNTPOver   `json:"over,omitempty"`
	// With ReadAddr: the server read from, and how long after the last
	// ingest it listed everything the ingesting one did.
	ReadAddr       string  `json:"read_addr,omitempty"`
	ListedAfterSec float64 `json:"listed_after_seconds,omitempty"`
	// With SpreadAddrs: how the takethis-spread phase's articles became
	// listed at every site.
	Spread *NNTPSpread `json:"spread,omitempty"`
}

// Phase returns the figures of the named phase at the given connection
// count, if it ran.
func (r NNTPResult) Phase(name string, conns int) (NNTPPhase, bool) {
	for _, p := range r.Phases {
		if p.Name == name && p.Conns == conns {
			return p, true
		}
	}
	return NNTPPhase{}, false
}

// NNTP runs the selected phases against cfg.Addr in this order: a TAKETHIS
// feed of cfg.Articles articles, a POST of a fifth as many, ARTICLE and
// then BODY of the articles just fed with 1, 4 and 16 lockstep
// connections, OVER of the whole group, and ARTICLE from one plain
// connection that does not re-arm TCP_QUICKACK. A phase in which nothing
// succeeds ends the run with an error naming the server's reply.
func NNTP(cfg NNTPConfig) (NNTPResult, error) {
	if cfg.ReadBy == "" {
		cfg.ReadBy = "number"
	}
	if cfg.Window == 0 {
		cfg.Window = nntpWindow
	}
	if cfg.Log == nil {
		cfg.Log = func(string, ...any) {}
	}
	if len(cfg.PostConns) == 0 {
		cfg.PostConns = []int{1}
	}
	res := NNTPResult{Addr: cfg.Addr, Group: cfg.Group, SizeBytes: cfg.SizeBytes, Articles: cfg.Articles, ReadBy: cfg.ReadBy, ReadAddr: cfg.ReadAddr}
	if err := cfg.Validate(); err != nil {
		return res, err
	}
	run := &nntpRun{cfg: cfg, byID: map[string]*article{}, addr: cfg.Addr}
	now := time.Now()
	// Unique per run, so that a server keeping its history accepts the
	// articles of every run.
	tag := fmt.Sprintf("triad.%d.%08x", now.Unix(), rand.Uint32())

	c, err := run.dial(time.Now().Add(ioGrace), false)
	if err != nil {
		return res, err
	}
	res.Greeting = c.Greeting()
	if err := c.quit(); err != nil {
		cfg.Log("bench nntp: closing the first connection: %v", err)
	}

	fed, err := run.ingest(&res, tag, now)
	if err != nil {
		return res, err
	}
	if cfg.runs("article", "body", "over", "plain") {
		if err := run.readBack(&res, fed); err != nil {
			return res, err
		}
	}
	// Last, so that the reads by number (the group's newest articles)
	// take none that the read site ingested itself.
	if cfg.runs("takethis-spread") && len(cfg.SpreadAddrs) > 0 {
		spec := articleSpec{group: cfg.Group, tag: tag + ".spread", date: now, sizeBytes: cfg.SizeBytes}
		err = run.spread(&res, spec)
	}
	return res, err
}

// ingest runs the takethis and post phases that cfg selects, adding their
// figures to res, and returns the articles they fed.
func (r *nntpRun) ingest(res *NNTPResult, tag string, now time.Time) ([]*article, error) {
	cfg := r.cfg
	var fed []*article
	if cfg.runs("takethis") {
		spec := articleSpec{group: cfg.Group, tag: tag, date: now, sizeBytes: cfg.SizeBytes}
		arts, err := r.generate(spec, cfg.Articles)
		if err != nil {
			return fed, err
		}
		cpu := startCPU(cfg.CPUPids)
		p := r.phase("takethis", len(arts), func() NNTPPhase { return r.takeThis(arts) })
		cpu.stop(&p)
		res.Phases = append(res.Phases, p)
		if err := r.check(p); err != nil {
			return fed, err
		}
		fed = append(fed, arts...)
	}
	if !cfg.runs("post") {
		return fed, nil
	}
	for _, conns := range cfg.PostConns {
		spec := articleSpec{group: cfg.Group, tag: fmt.Sprintf("%s.post%d", tag, conns), date: now, sizeBytes: cfg.SizeBytes, forPost: true}
		arts, err := r.generate(spec, max(conns, cfg.Articles/5))
		if err != nil {
			return fed, err
		}
		cpu := startCPU(cfg.CPUPids)
		p := r.phase(fmt.Sprintf("post, %d conns", conns), len(arts), func() NNTPPhase { return r.post(arts, conns) })
		cpu.stop(&p)
		res.Phases = append(res.Phases, p)
		if err := r.check(p); err != nil {
			return fed, err
		}
		fed = append(fed, arts...)
	}
	return fed, nil
}

// readBack runs the read phases that cfg selects (from ReadAddr once it
// lists what was fed, if set), adding their figures to res.
func (r *nntpRun) readBack(res *NNTPResult, fed []*article) error {
	cfg := r.cfg
	if cfg.ReadAddr != "" {
		waited, err := r.waitListed([]string{cfg.ReadAddr})
		if err != nil {
			return err
		}
		res.ListedAfterSec = waited.Seconds()
		r.addr = cfg.ReadAddr
	}
	var targets []readTarget
	if cfg.runs("article", "body", "plain") {
		var err error
		if targets, err = r.targets(fed); err != nil {
			return err
		}
	}
	for _, verb := range []string{"article", "body"} {
		if !cfg.runs(verb) {
			continue
		}
		for _, n := range nntpReadConns {
			p := r.phase(fmt.Sprintf("%s, %d conns", verb, n), len(targets), func() NNTPPhase { return r.read(verb, n, true, targets, cfg.MaxPhase) })
			res.Phases = append(res.Phases, p)
			if err := r.check(p); err != nil {
				return err
			}
		}
	}
	if cfg.runs("over") {
		o, err := r.over()
		if err != nil {
			return err
		}
		res.Over = &o
	}
	if cfg.runs("plain") {
		p := r.read("plain", 1, false, targets, min(cfg.MaxPhase, plainSeconds*time.Second))
		res.Phases = append(res.Phases, p)
		if err := r.check(p); err != nil {
			return err
		}
	}
	return nil
}

// nntpRun is the state of one run: its configuration and the articles it
// sent, by message-id, to check what comes back.
type nntpRun struct {
	cfg  NNTPConfig
	byID map[string]*article
	addr string   // the server connections go to: cfg.Addr, then cfg.ReadAddr for reads
	bar  Progress // the running phase's, or nil
}

// phase runs fn with a progress bar of total articles named name.
func (r *nntpRun) phase(name string, total int, fn func() NNTPPhase) NNTPPhase {
	bar := startProgress(r.cfg.Progress, name, total)
	if _, none := bar.(nop); !none {
		r.bar = bar
	}
	p := fn()
	bar.Finish()
	r.bar = nil
	return p
}

// generate makes n articles, before any clock starts.
func (r *nntpRun) generate(spec articleSpec, n int) ([]*article, error) {
	rng := rand.New(rand.NewPCG(r.cfg.Seed, uint64(len(r.byID))))
	arts := make([]*article, n)
	for i := range arts {
		a, err := spec.article(i, rng)
		if err != nil {
			return nil, err
		}
		arts[i] = &a
		r.byID[a.id] = &a
	}
	return arts, nil
}

// check logs a phase and turns one in which nothing succeeded into an error.
func (r *nntpRun) check(p NNTPPhase) error {
	ack := ""
	if !p.QuickAck {
		ack = ", no TCP_QUICKACK"
	}
	r.cfg.Log("bench nntp: %s, %d conns%s: %d of %d in %.2fs, %.0f art/s, %.2f MB/s, p50 %.3f ms, p99 %.3f ms; %d failed",
		p.Name, p.Conns, ack, p.Done, p.Offered, p.Seconds, p.OpsPerS, p.MBps, p.P50Ms, p.P99Ms, p.Failed)
	if p.ServerCPUUs > 0 {
		r.cfg.Log("bench nntp: %s, %d conns: CPU per article: servers %.0f µs, this client %.0f µs",
			p.Name, p.Conns, p.ServerCPUUs, p.ClientCPUUs)
	}
	if p.FirstError != "" {
		r.cfg.Log("bench nntp: %s: first error: %s", p.Name, p.FirstError)
	}
	if p.Done == 0 {
		why := p.FirstError
		switch {
		case why == "":
			why = "nothing finished within the phase's bound"
		case p.Rejected == p.Failed && (p.Name == "takethis" || p.Name == "post"):
			why += fmt.Sprintf(" (does group %s exist on the server?)", r.cfg.Group)
		}
		return fmt.Errorf("bench: %s with %d conns: no article succeeded: %s", p.Name, p.Conns, why)
	}
	return nil
}

// connStats is what one connection of a phase did.
type connStats struct {
	bar                             Progress // the phase's, or nil
	done, rejected, failed, checked int
	bytes                           int64
	lat                             []time.Duration
	acked                           []*article // TAKETHIS: the articles acknowledged (239)
	end                             time.Time
	err                             error // the first error
}

// tick counts an article done, on the phase's progress bar too.
func (s *connStats) tick() {
	s.done++
	if s.bar != nil {
		s.bar.Add(1)
	}
}

func (s *connStats) fail(err error) {
	s.failed++
	if s.err == nil {
		s.err = err
	}
}

// figures sums the connections of one phase that started at t0.
func figures(name string, quickAck bool, offered int, t0 time.Time, stats []connStats) NNTPPhase {
	p := NNTPPhase{Name: name, Conns: len(stats), QuickAck: quickAck, Offered: offered}
	var lat []time.Duration
	var total int64
	end := t0
	for _, s := range stats {
		p.Done += s.done
		p.Failed += s.failed
		p.Rejected += s.rejected
		p.Checked += s.checked
		total += s.bytes
		lat = append(lat, s.lat...)
		if s.end.After(end) {
			end = s.end
		}
		if s.err != nil && p.FirstError == "" {
			p.FirstError = s.err.Error()
		}
	}
	p.Seconds = end.Sub(t0).Seconds()
	if p.Seconds > 0 {
		p.OpsPerS = float64(p.Done) / p.Seconds
		p.MBps = float64(total) / p.Seconds / 1e6
	}
	slices.Sort(lat)
	p.P50Ms, p.P99Ms = quantileMs(lat, 0.5), quantileMs(lat, 0.99)
	return p
}

// quantileMs is the q-quantile of sorted latencies, in milliseconds.
func quantileMs(sorted []time.Duration, q float64) float64 {
	return float64(stats.Quantile(sorted, q)) / float64(time.Millisecond)
}

// takeThis feeds arts over cfg.Conns streaming connections, each with up
// to cfg.Window TAKETHIS in flight: a writer sends, a reader collects the
// 239/439 replies in order.
func (r *nntpRun) takeThis(arts []*article) NNTPPhase {
	stats, t0 := r.feed(slices.Repeat([]string{r.addr}, r.cfg.Conns), arts)
	return figures("takethis", true, len(arts), t0, stats)
}

// feed sends arts with TAKETHIS over one streaming connection to each of
// addrs, all at once, connection i taking articles i, i+len(addrs), ...
// It returns each connection's figures and when the first article went.
func (r *nntpRun) feed(addrs []string, arts []*article) ([]connStats, time.Time) {
	stats := make([]connStats, len(addrs))
	conns := make([]*nntpConn, len(addrs))
	setup := time.Now().Add(r.cfg.MaxPhase)
	for i, addr := range addrs {
		c, err := r.feederAt(addr, setup)
		if err != nil {
			stats[i].fail(err)
			continue
		}
		conns[i] = c
	}
	t0 := time.Now()
	stop := t0.Add(r.cfg.MaxPhase)
	var wg sync.WaitGroup
	for i, c := range conns {
		if c == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []*article
			for j := i; j < len(arts); j += len(conns) {
				mine = append(mine, arts[j])
			}
			stats[i] = c.stream(mine, r.cfg.Window, stop, r.bar)
		}()
	}
	wg.Wait()
	r.close(conns)
	return stats, t0
}

// stream is one TAKETHIS connection's feed.
func (c *nntpConn) stream(arts []*article, window int, stop time.Time, bar Progress) connStats {
	type sent struct {
		a *article
		t time.Time
	}
	c.setDeadline(stop.Add(ioGrace))
	// A slot is taken before a command is sent and given back when its
	// reply is read; inflight holds the commands sent, in order.
	slots := make(chan struct{}, window)
	inflight := make(chan sent, window)
	readerDone := make(chan struct{})
	rs := connStats{bar: bar} // the reader's
	go func() {
		defer close(readerDone)
		for s := range inflight {
			line, err := c.ReadLine()
			<-slots
			if err != nil {
				rs.fail(fmt.Errorf("TAKETHIS %s: reading the reply: %w", s.a.id, err))
				return
			}
			rs.end = time.Now()
			code, _ := nntp.ParseStatus(line)
			switch {
			case code == nntp.CodeTakeThisOK && replyID(line, 1) == s.a.id:
				rs.tick()
				rs.acked = append(rs.acked, s.a)
				rs.bytes += int64(len(s.a.wire))
				rs.lat = append(rs.lat, rs.end.Sub(s.t))
			case code == nntp.CodeTakeThisRejected:
				rs.rejected++
				rs.fail(&nntp.ReplyError{Cmd: "TAKETHIS " + s.a.id, Line: string(line), Code: code})
			default:
				rs.fail(&nntp.ReplyError{Cmd: "TAKETHIS " + s.a.id, Line: string(line), Code: code})
			}
		}
	}()
	var werr error
feed:
	for _, a := range arts {
		if time.Now().After(stop) {
			break
		}
		select {
		case slots <- struct{}{}:
		case <-readerDone:
			break feed
		}
		inflight <- sent{a, time.Now()}
		bufs := net.Buffers{[]byte("TAKETHIS " + a.id + "\r\n"), a.wire}
		if _, werr = bufs.WriteTo(c.Conn()); werr != nil {
			werr = fmt.Errorf("TAKETHIS %s: %w", a.id, werr)
			break
		}
	}
	close(inflight)
	<-readerDone
	if werr != nil {
		rs.fail(werr)
	}
	return rs
}

// post sends arts with POST from conns reader connections, one article
// at a time on each, as newsreaders post.
func (r *nntpRun) post(arts []*article, conns int) NNTPPhase {
	stats := make([]connStats, conns)
	for i := range stats {
		stats[i].bar = r.bar
	}
	cs := make([]*nntpConn, conns)
	setup := time.Now().Add(r.cfg.MaxPhase)
	for i := range cs {
		c, err := r.reader(setup, true, false)
		if err == nil {
			if code, _ := nntp.ParseStatus([]byte(c.mode)); code == nntp.CodePostingProhibited {
				err = &nntp.ReplyError{Cmd: "MODE READER", Line: c.mode + " (posting not allowed)"}
				c.Close()
			}
		}
		if err != nil {
			stats[i].fail(err)
			continue
		}
		cs[i] = c
	}
	defer r.close(cs)
	t0 := time.Now()
	stop := t0.Add(r.cfg.MaxPhase)
	var wg sync.WaitGroup
	for i, c := range cs {
		if c == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.setDeadline(stop.Add(ioGrace))
			for j := i; j < len(arts) && time.Now().Before(stop); j += conns {
				if !postOne(c, arts[j], &stats[i]) {
					return
				}
			}
		}()
	}
	wg.Wait()
	return figures("post", true, len(arts), t0, stats)
}

// postOne posts one article and reports whether the connection is still
// usable.
func postOne(c *nntpConn, a *article, s *connStats) bool {
	t := time.Now()
	if _, err := c.Expect("POST", nntp.CodeSendPost); err != nil {
		s.fail(err)
		return !isIOError(err)
	}
	if _, err := c.Conn().Write(a.wire); err != nil {
		s.fail(fmt.Errorf("POST %s: %w", a.id, err))
		return false
	}
	_, err := c.ExpectReply("POST "+a.id, nntp.CodePosted)
	if err != nil && isIOError(err) {
		s.fail(err)
		return false
	}
	s.end = time.Now()
	var re *nntp.ReplyError
	switch {
	case err == nil:
		s.tick()
		s.bytes += int64(len(a.wire))
		s.lat = append(s.lat, s.end.Sub(t))
	case errors.As(err, &re) && re.Code == nntp.CodePostingFailed:
		s.rejected++
		s.fail(err)
	default:
		s.fail(err)
	}
	return true
}

// waitListed waits until every server of addrs lists as many articles of
// the group as the ingesting one (cfg.Addr) does: sites that learn of
// them by announcement. It returns how long that took.
func (r *nntpRun) waitListed(addrs []string) (time.Duration, error) {
	want, err := r.groupAt(r.cfg.Addr)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	deadline := start.Add(r.cfg.MaxPhase)
	for _, addr := range addrs {
		for {
			got, err := r.groupAt(addr)
			if err != nil {
				return 0, err
			}
			if got.count >= want.count {
				break
			}
			if time.Now().After(deadline) {
				return 0, fmt.Errorf("bench: %s lists %d articles of %s %v after the ingest, %s %d", addr, got.count, r.cfg.Group, r.cfg.MaxPhase, r.cfg.Addr, want.count)
			}
			time.Sleep(listPoll)
		}
	}
	return time.Since(start), nil
}

// groupAt returns the server at addr's reply to GROUP, on a connection of
// its own.
func (r *nntpRun) groupAt(addr string) (groupInfo, error) {
	c, err := r.readerAt(addr, time.Now().Add(ioGrace), true, true)
	if err != nil {
		return groupInfo{}, err
	}
	r.close([]*nntpConn{c})
	return c.group, nil
}

// readTarget is one article to read: the command's argument (a number or
// a message-id) and, when known, the article sent.
type readTarget struct {
	arg string
	a   *article
}

// targets lists the articles the read phases fetch: by message-id, those
// this run fed; by number, the group's newest cfg.Articles (after an
// ingest, the articles just fed).
func (r *nntpRun) targets(fed []*article) ([]readTarget, error) {
	var ts []readTarget
	if r.cfg.ReadBy == "id" {
		for _, a := range fed[:min(len(fed), r.cfg.Articles)] {
			ts = append(ts, readTarget{arg: a.id, a: a})
		}
		return ts, nil
	}
	c, err := r.reader(time.Now().Add(ioGrace), true, true)
	if err != nil {
		return nil, err
	}
	r.close([]*nntpConn{c})
	g := c.group
	if g.count == 0 || g.high < g.low {
		return nil, fmt.Errorf("bench: group %s is empty (%q): nothing to read", r.cfg.Group, g.line)
	}
	for n := max(g.low, g.high-int64(r.cfg.Articles)+1); n <= g.high; n++ {
		ts = append(ts, readTarget{arg: strconv.FormatInt(n, 10)})
	}
	return ts, nil
}

// read fetches the targets with the verb (article, body, or plain: ARTICLE
// without TCP_QUICKACK) from conns lockstep connections, one command in
// flight on each, for at most limit.
func (r *nntpRun) read(name string, conns int, quickAck bool, ts []readTarget, limit time.Duration) NNTPPhase {
	verb := "ARTICLE"
	if name == "body" {
		verb = "BODY"
	}
	stats := make([]connStats, conns)
	for i := range stats {
		stats[i].bar = r.bar
	}
	cs := make([]*nntpConn, conns)
	setup := time.Now().Add(limit)
	for i := range cs {
		c, err := r.reader(setup, quickAck, r.cfg.ReadBy == "number")
		if err != nil {
			stats[i].fail(err)
			continue
		}
		cs[i] = c
	}
	t0 := time.Now()
	stop := t0.Add(limit)
	done := make(chan struct{})
	for i, c := range cs {
		go func() {
			defer func() { done <- struct{}{} }()
			if c == nil {
				return
			}
			c.setDeadline(stop.Add(ioGrace))
			s := &stats[i]
			for j := i; j < len(ts) && time.Now().Before(stop); j += conns {
				err := r.fetch(c, verb, ts[j], s)
				if err != nil {
					s.fail(err)
					if isIOError(err) {
						return
					}
				}
			}
		}()
	}
	for range cs {
		<-done
	}
	r.close(cs)
	return figures(name, quickAck, len(ts), t0, stats)
}

// fetch sends one ARTICLE or BODY and reads its reply, checking the body
// against the one sent when the article is this run's.
func (r *nntpRun) fetch(c *nntpConn, verb string, t readTarget, s *connStats) error {
	start := time.Now()
	cmd := verb + " " + t.arg
	line, err := c.Cmd(cmd)
	if err != nil {
		return err
	}
	code, _ := nntp.ParseStatus(line)
	switch {
	case code == nntp.CodeArticleFollows && verb == "ARTICLE", code == nntp.CodeBodyFollows && verb == "BODY":
	case code == nntp.CodeNoArticleNumber || code == nntp.CodeNoArticleID:
		s.rejected++
		return &nntp.ReplyError{Cmd: cmd, Line: string(line), Code: code}
	default:
		return &nntp.ReplyError{Cmd: cmd, Line: string(line), Code: code}
	}
	id := replyID(line, 2)
	if c.block, _, err = c.ReadBlock(c.block[:0], maxReplyBlockBytes); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	s.end = time.Now()
	want := t.a
	if want == nil {
		want = r.byID[id]
	}
	if want != nil {
		if err := checkBody(verb, id, c.block, want); err != nil {
			return fmt.Errorf("%s: %w", cmd, err)
		}
		s.checked++
	}
	s.tick()
	s.bytes += int64(len(c.block))
	s.lat = append(s.lat, s.end.Sub(start))
	return nil
}

// checkBody compares the block of an ARTICLE or BODY reply that named id
// with the article sent. The server may add headers, but the body must
// come back as it went, dot-stuffing included.
func checkBody(verb, id string, block []byte, want *article) error {
	if id != "" && id != want.id {
		return fmt.Errorf("asked for %s, the reply names %s", want.id, id)
	}
	body := block
	if verb == "ARTICLE" {
		i := bytes.Index(block, []byte("\r\n\r\n"))
		if i < 0 {
			return errors.New("no empty line after the headers")
		}
		body = block[i+4:]
	}
	sent := want.wire[want.bodyAt:]
	if !bytes.Equal(body, sent) {
		i := 0
		for i < len(body) && i < len(sent) && body[i] == sent[i] {
			i++
		}
		return fmt.Errorf("the body of %s came back different: %d bytes, %d sent, first difference at byte %d", want.id, len(body), len(sent), i)
	}
	return nil
}

// over times OVER of the whole group, repeated, and reports the median.
func (r *nntpRun) over() (NNTPOver, error) {
	var o NNTPOver
	c, err := r.reader(time.Now().Add(ioGrace), true, true)
	if err != nil {
		return o, err
	}
	defer r.close([]*nntpConn{c})
	g := c.group
	if g.count == 0 || g.high < g.low {
		return o, fmt.Errorf("bench: group %s is empty (%q): no overview to fetch", r.cfg.Group, g.line)
	}
	stop := time.Now().Add(r.cfg.MaxPhase)
	c.setDeadline(stop.Add(ioGrace))
	cmd := fmt.Sprintf("OVER %d-%d", g.low, g.high)
	var secs []float64
	for len(secs) < overRepeats && (len(secs) == 0 || time.Now().Before(stop)) {
		t := time.Now()
		if _, err := c.Expect(cmd, nntp.CodeOverviewFollows); err != nil {
			return o, err
		}
		var lines int
		if c.block, lines, err = c.ReadBlock(c.block[:0], maxReplyBlockBytes); err != nil {
			return o, fmt.Errorf("%s: %w", cmd, err)
		}
		secs = append(secs, time.Since(t).Seconds())
		o.Lines, o.Bytes = lines, len(c.block)
	}
	slices.Sort(secs)
	o.Repeats = len(secs)
	o.MedianSeconds = secs[len(secs)/2]
	o.LinesPerS = float64(o.Lines) / o.MedianSeconds
	o.MBps = float64(o.Bytes) / o.MedianSeconds / 1e6
	r.cfg.Log("bench nntp: OVER of %d lines (%d bytes): median %.4fs of %d, %.0f lines/s", o.Lines, o.Bytes, o.MedianSeconds, o.Repeats, o.LinesPerS)
	return o, nil
}

// close ends the connections that were opened, logging what goes wrong:
// the phase has been measured by then.
func (r *nntpRun) close(cs []*nntpConn) {
	for _, c := range cs {
		if c == nil {
			continue
		}
		if err := c.quit(); err != nil {
			r.cfg.Log("bench nntp: closing a connection: %v", err)
		}
	}
}

// isIOError reports whether err broke the connection rather than being a
// reply: the connection cannot go on after it.
func isIOError(err error) bool {
	var re *nntp.ReplyError
	return !errors.As(err, &re)
}

// nntpConn is one client connection with what the benchmark learnt on
// it. Every read and write is bounded by its deadline.
type nntpConn struct {
	*nntp.Client
	mode  string    // the reply to MODE READER, on reader connections
	group groupInfo // the reply to GROUP, when sent
	block []byte    // reused for multi-line replies
}

// groupInfo is a 211 reply to GROUP.
type groupInfo struct {
	count, low, high int64
	line             string
}

// dial connects to the run's current server and reads the greeting.
func (r *nntpRun) dial(deadline time.Time, quickAck bool) (*nntpConn, error) {
	return r.dialAt(r.addr, deadline, quickAck)
}

// dialAt connects to addr and reads the greeting (200 or 201).
func (r *nntpRun) dialAt(addr string, deadline time.Time, quickAck bool) (*nntpConn, error) {
	d := net.Dialer{Deadline: deadline}
	nc, err := d.Dial("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	tc := nc.(*net.TCPConn)
	var src io.Reader // nil: the connection itself
	if quickAck {
		raw, err := tc.SyscallConn()
		if err != nil {
			tc.Close()
			return nil, err
		}
		src = quickAckReader{tc, raw}
	}
	tc.SetDeadline(deadline) // only fails on a closed connection, which the read reports
	cl, err := nntp.NewClient(tc, src)
	if err != nil {
		tc.Close()
		return nil, fmt.Errorf("bench: %s: %w", addr, err)
	}
	if code, _ := nntp.ParseStatus([]byte(cl.Greeting())); code != nntp.CodePostingAllowed && code != nntp.CodePostingProhibited {
		tc.Close()
		return nil, &nntp.ReplyError{Cmd: "(connect to " + addr + ")", Line: cl.Greeting(), Code: code}
	}
	return &nntpConn{Client: cl}, nil
}

// feederAt opens a streaming connection to addr: AUTHINFO if configured,
// then MODE STREAM, which must answer 203.
func (r *nntpRun) feederAt(addr string, deadline time.Time) (*nntpConn, error) {
	c, err := r.dialAt(addr, deadline, true)
	if err != nil {
		return nil, err
	}
	if err := r.auth(c); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.ModeStream(); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// reader opens a reader connection to the run's current server.
func (r *nntpRun) reader(deadline time.Time, quickAck, group bool) (*nntpConn, error) {
	return r.readerAt(r.addr, deadline, quickAck, group)
}

// readerAt opens a reader connection to addr: MODE READER, AUTHINFO if
// configured, and GROUP if asked.
func (r *nntpRun) readerAt(addr string, deadline time.Time, quickAck, group bool) (*nntpConn, error) {
	c, err := r.dialAt(addr, deadline, quickAck)
	if err != nil {
		return nil, err
	}
	if c.mode, err = c.Expect("MODE READER", nntp.CodePostingAllowed, nntp.CodePostingProhibited); err == nil {
		err = r.auth(c)
	}
	if err == nil && group {
		c.group, err = c.selectGroup(r.cfg.Group)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// auth logs in if the run has a user.
func (r *nntpRun) auth(c *nntpConn) error {
	if r.cfg.User == "" {
		return nil
	}
	return c.Auth(r.cfg.User, r.cfg.Pass)
}

// selectGroup sends GROUP and parses its 211 reply.
func (c *nntpConn) selectGroup(name string) (groupInfo, error) {
	line, err := c.Expect("GROUP "+name, nntp.CodeGroupSelected)
	if err != nil {
		return groupInfo{}, err
	}
	g, err := parseGroup(line)
	if err != nil {
		return g, &nntp.ReplyError{Cmd: "GROUP " + name, Line: line}
	}
	return g, nil
}

// parseGroup parses "211 count low high group".
func parseGroup(line string) (groupInfo, error) {
	g := groupInfo{line: line}
	f := strings.Fields(line)
	if len(f) < 4 || f[0] != "211" {
		return g, errors.New("not a 211 reply")
	}
	var err [3]error
	g.count, err[0] = strconv.ParseInt(f[1], 10, 64)
	g.low, err[1] = strconv.ParseInt(f[2], 10, 64)
	g.high, err[2] = strconv.ParseInt(f[3], 10, 64)
	return g, errors.Join(err[:]...)
}

func (c *nntpConn) setDeadline(t time.Time) {
	// Only fails on a closed connection, which the next read or write
	// reports.
	c.Conn().SetDeadline(t)
}

// quit sends QUIT, waits a little for its reply and closes.
func (c *nntpConn) quit() error {
	defer c.Close()
	c.setDeadline(time.Now().Add(2 * time.Second))
	_, err := c.Expect("QUIT", nntp.CodeClosing)
	return err
}

// quickAckReader re-arms TCP_QUICKACK before every read. Linux turns
// quick ACKs off again after a while; without them a lockstep client
// delays the ACK of a reply's first segment by up to 40 ms, and a server
// that sends the status line and the article in two writes under Nagle's
// algorithm (INN's nnrpd does) waits for that ACK on every article.
type quickAckReader struct {
	c   *net.TCPConn
	raw syscall.RawConn
}

func (q quickAckReader) Read(p []byte) (int, error) {
	var serr error
	if err := q.raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_QUICKACK, 1)
	}); err != nil {
		return 0, err
	}
	if serr != nil {
		return 0, fmt.Errorf("TCP_QUICKACK: %w", serr)
	}
	return q.c.Read(p)
}

// replyID returns the i-th field of a status line (counting the code as
// 0) if it looks like a message-id, else "".
func replyID(line []byte, i int) string {
	f := bytes.Fields(line)
	if i < len(f) && len(f[i]) > 2 && f[i][0] == '<' && f[i][len(f[i])-1] == '>' {
		return string(f[i])
	}
	return ""
}

// article is one generated article as it goes on the wire.
type article struct {
	id     string // the message-id, with its angle brackets
	wire   []byte // header lines, the empty line, the dot-stuffed body, ".\r\n"
	bodyAt int    // where the body starts in wire
}

// articleSpec says how to generate a run's articles.
type articleSpec struct {
	group     string
	tag       string    // makes message-ids unique to the run
	date      time.Time // of the Date header
	sizeBytes int       // exact wire size of every article
	forPost   bool      // leave out Path and Date: a posting server adds them
}

// Body lines: text words up to 78 characters (as RFC 5322 recommends),
// base64 in 76-character lines above binaryFromBytes, as binaries are
// posted.
const (
	maxTextLine   = 78
	maxBase64Line = 76
)

// benchWords is the vocabulary of text bodies.
var benchWords = strings.Fields(`chord ring finger successor predecessor lookup
hop replica fragment block merkle tree sync maintenance expiry segment index
spool feed peer site header overview thread newsgroup reader poster stream
article message digest vivaldi coordinate latency window congestion
durable disk commit checkpoint recovery node key value`)

// article generates the i-th article of the spec: headers a feeding
// server accepts (Path, From, Newsgroups, Subject, Message-ID, Date), and
// a body whose lines are dot-stuffed on the wire, some starting with a dot
// and some a lone dot, so that the server's unstuffing is exercised. The
// wire text is exactly sizeBytes long when the headers fit.
func (s articleSpec) article(i int, r *rand.Rand) (article, error) {
	id := fmt.Sprintf("<%s.%d@bench.invalid>", s.tag, i)
	head := s.head(id, i, 0)
	need := s.sizeBytes - len(head) - len(".\r\n")
	if need == 1 {
		// No body is one byte long: grow the Subject instead.
		head = s.head(id, i, 1)
		need = 0
	}
	if need < 0 {
		return article{}, fmt.Errorf("bench: an article of %d bytes cannot hold its %d bytes of headers", s.sizeBytes, len(head)+3)
	}
	wire := make([]byte, 0, s.sizeBytes)
	wire = append(wire, head...)
	if s.sizeBytes > binaryFromBytes {
		wire = appendBase64Body(wire, need, r)
	} else {
		wire = appendTextBody(wire, need, r)
	}
	wire = append(wire, ".\r\n"...)
	return article{id: id, wire: wire, bodyAt: len(head)}, nil
}

// head returns the header lines and the empty line after them, the
// Subject padded by pad characters.
func (s articleSpec) head(id string, i, pad int) string {
	var b strings.Builder
	if !s.forPost {
		b.WriteString("Path: bench-feeder.invalid!not-for-mail\r\n")
	}
	fmt.Fprintf(&b, "From: triad bench <bench@example.invalid>\r\n")
	fmt.Fprintf(&b, "Newsgroups: %s\r\n", s.group)
	fmt.Fprintf(&b, "Subject: triad bench article %d%s\r\n", i, strings.Repeat("!", pad))
	fmt.Fprintf(&b, "Message-ID: %s\r\n", id)
	if !s.forPost {
		fmt.Fprintf(&b, "Date: %s\r\n", s.date.UTC().Format(time.RFC1123Z))
	}
	b.WriteString("Organization: triad bench nntp\r\n\r\n")
	return b.String()
}

// appendTextBody appends dot-stuffed lines of words taking exactly n wire
// bytes (n ≠ 1). About one line in 16 starts with a dot and one in 40 is
// a lone dot.
func appendTextBody(dst []byte, n int, r *rand.Rand) []byte {
	for n > 0 {
		if n >= 4 && n != 5 && r.IntN(40) == 0 {
			dst = append(dst, "..\r\n"...) // a lone "." stuffed
			n -= 4
			continue
		}
		w := lineWidth(n, maxTextLine)
		start := len(dst)
		if w >= 3 && r.IntN(16) == 0 {
			dst = append(dst, ".."...) // a line starting with ".", stuffed
		}
		for len(dst)-start < w {
			dst = append(dst, benchWords[r.IntN(len(benchWords))]...)
			dst = append(dst, ' ')
		}
		dst = dst[:start+w]
		if w > 0 && dst[len(dst)-1] == ' ' {
			dst[len(dst)-1] = 's' // no trailing white space
		}
		dst = append(dst, "\r\n"...)
		n -= w + 2
	}
	return dst
}

// appendBase64Body appends lines of base64 text of random bytes taking
// exactly n wire bytes (n ≠ 1). Base64 never starts a line with a dot.
func appendBase64Body(dst []byte, n int, r *rand.Rand) []byte {
	raw := make([]byte, n*3/4+3)
	for i := 0; i < len(raw); i += 8 {
		v := r.Uint64()
		for k := 0; k < 8 && i+k < len(raw); k++ {
			raw[i+k] = byte(v >> (8 * k))
		}
	}
	text := base64.StdEncoding.AppendEncode(nil, raw)
	for n > 0 {
		w := lineWidth(n, maxBase64Line)
		dst = append(dst, text[:w]...)
		dst = append(dst, "\r\n"...)
		text = text[w:]
		n -= w + 2
	}
	return dst
}

// lineWidth is the width of the next body line when n wire bytes remain
// (n ≥ 2): as wide as allowed, but never leaving the one byte no line can
// take.
func lineWidth(n, maxWidth int) int {
	w := min(maxWidth, n-2)
	if n-(w+2) == 1 {
		w--
	}
	return w
}
