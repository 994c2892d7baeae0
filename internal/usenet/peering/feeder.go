package peering

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"triad/internal/fault"
	"triad/internal/nntp"
	"triad/internal/usenet"
)

// readTimeout bounds reading an article to feed it, from the spool (the
// DHT's sets its own bound too).
const readTimeout = time.Minute

// PeerMode is what a site sends a peer.
type PeerMode uint8

const (
	// Announce sends a site of the same ring the headers and key of each
	// article (TAKEDHT): the article itself is in the DHT both share.
	Announce PeerMode = iota
	// Feed sends a traditional server whole articles (CHECK and
	// TAKETHIS, RFC 4644), as INN's innfeed does: the way articles posted
	// at any site of the ring reach the rest of Usenet.
	Feed
	// Mesh is Announce to a site that peers with every other site of the
	// ring (a full mesh): it is sent only the articles that entered the
	// ring here, since every other site announces its own to it. Passing
	// on what other peers announced would only earn 438s.
	Mesh
)

func (m PeerMode) String() string {
	return [...]string{Announce: "announce", Feed: "feed", Mesh: "mesh"}[m]
}

// A Peer is a site this one passes its articles to.
type Peer struct {
	// Name is the peer's name in Path headers (its --pathhost). An
	// article whose Path holds it is not sent to it; an announcing peer
	// logs in here under this name.
	Name string
	Addr string // its news server, host:port
	// Password is the link's shared secret: this site logs in there
	// (AUTHINFO, as its own Path name) with it, and an announcing peer
	// logs in here with it. Empty: no AUTHINFO.
	Password string
	// TLS, if set, makes the link mutual TLS with this configuration (it
	// checks that the peer's certificate is issued to Name): the peer is
	// dialled at its TLS listener and knows this site by its certificate,
	// so no AUTHINFO is sent.
	TLS    *tls.Config
	Mode   PeerMode
	Groups string // wildmat of the groups it is sent; all if empty
}

// FeedConfig configures a site's outgoing feeds.
type FeedConfig struct {
	Site  *usenet.Site // with Relay set
	Peers []Peer
	// MaxBacklog bounds the articles queued for a peer that is down or
	// slow; past it the oldest are dropped for it and counted (1,000,000).
	MaxBacklog uint64
	// MaxBacklogBytes bounds the same queue in bytes (its records: heads,
	// message-ids, keys), each peer's alike; past it the oldest are
	// dropped for it and counted (256 MB).
	MaxBacklogBytes uint64
	Batch           int           // articles per CHECK round (256)
	Retry           time.Duration // first wait after a failed connection, doubled up to 30 s (1 s)
	// Keepalive is how long a feed's connection may sit idle before the
	// feeder sends MODE STREAM on it again (1 min): a peer drops a silent client
	// after its idle timeout (RFC 3977 asks for at least 3 minutes; 10 in
	// triad and INN), and the first article after a quiet hour would
	// otherwise find the connection gone.
	Keepalive time.Duration
	Log       *slog.Logger
	// StatusFile, if set, is rewritten every few seconds with each
	// peer's state, as innfeed.status is.
	StatusFile string
}

// Feeds runs one feeder per peer.
type Feeds struct {
	cfg     FeedConfig
	feeders []*feeder
	stop    chan struct{}
	wg      sync.WaitGroup
}

// PeerStatus is one feeder's state.
type PeerStatus struct {
	Peer      string
	Mode      string
	Addr      string
	Connected bool
	Backlog   usenet.PeerBacklog
	Offered   uint64 // CHECKs sent
	Sent      uint64 // articles or announcements taken (239)
	Refused   uint64 // not wanted (438) or refused (439)
	// Connects counts the connections made: one for a feed kept alive,
	// one more for each the peer or the network ended.
	Connects  uint64
	Paused    bool // held by the operator (Feeds.Pause)
	LastError string
}

// StartFeeds starts a feeder for every peer.
func StartFeeds(cfg FeedConfig) (*Feeds, error) {
	if cfg.Site == nil || !cfg.Site.Relay() {
		return nil, errors.New("peering: feeds need a site with Relay set")
	}
	if cfg.MaxBacklog == 0 {
		cfg.MaxBacklog = 1_000_000
	}
	if cfg.MaxBacklogBytes == 0 {
		cfg.MaxBacklogBytes = 256 << 20
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 256
	}
	if cfg.Retry <= 0 {
		cfg.Retry = time.Second
	}
	if cfg.Keepalive <= 0 {
		cfg.Keepalive = time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	f := &Feeds{cfg: cfg, stop: make(chan struct{})}
	seen := map[string]bool{}
	for _, p := range cfg.Peers {
		if p.Name == "" || p.Addr == "" || seen[p.Name] {
			return nil, fmt.Errorf("peering: peer %q: want a unique name and an address", p.Name)
		}
		seen[p.Name] = true
		if err := cfg.Site.List().StartCursor(p.Name); err != nil {
			return nil, err
		}
		f.feeders = append(f.feeders, &feeder{feeds: f, peer: p, wake: cfg.Site.Subscribe(), kick: make(chan struct{}, 1)})
	}
	for _, fd := range f.feeders {
		f.wg.Add(1)
		go fd.run()
	}
	f.wg.Add(1)
	go f.housekeep()
	return f, nil
}

// Close stops every feeder, cutting short any transfer in progress; what
// they had not sent stays queued.
func (f *Feeds) Close() {
	select {
	case <-f.stop:
	default:
		close(f.stop)
	}
	for _, fd := range f.feeders {
		fd.mu.Lock()
		if fd.live != nil {
			fd.live.Close()
		}
		fd.mu.Unlock()
	}
	f.wg.Wait()
}

// Pause holds (pause) or lets go the feed to peer, or every feed when
// peer is "", as ctlinnd's feed commands do: a held feed sends nothing,
// and its articles wait in the out log (within its bounds) until it is
// let go. A restart lets every feed go.
func (f *Feeds) Pause(peer string, pause bool) error {
	found := false
	for _, fd := range f.feeders {
		if peer == "" || fd.peer.Name == peer {
			found = true
			fd.mu.Lock()
			fd.st.Paused = pause
			fd.mu.Unlock()
			select {
			case fd.kick <- struct{}{}:
			default:
			}
		}
	}
	if !found {
		return fmt.Errorf("no feed to %q here", peer)
	}
	return nil
}

// Peers are the sites fed, with the addresses their feeds go to.
func (f *Feeds) Peers() []Peer {
	out := make([]Peer, len(f.feeders))
	for i, fd := range f.feeders {
		out[i] = fd.peer
	}
	return out
}

func (f *Feeds) closing() bool {
	select {
	case <-f.stop:
		return true
	default:
		return false
	}
}

// Status is every feeder's state.
func (f *Feeds) Status() []PeerStatus {
	var out []PeerStatus
	for _, fd := range f.feeders {
		fd.mu.Lock()
		st := fd.st
		fd.mu.Unlock()
		st.Peer, st.Mode, st.Addr = fd.peer.Name, fd.peer.Mode.String(), fd.peer.Addr
		st.Backlog, _ = f.cfg.Site.List().Backlog(fd.peer.Name)
		out = append(out, st)
	}
	return out
}

func (f *Feeds) names() []string {
	var out []string
	for _, fd := range f.feeders {
		out = append(out, fd.peer.Name)
	}
	return out
}

// housekeep applies the backlog bound and writes the status file.
func (f *Feeds) housekeep() {
	defer f.wg.Done()
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		if err := f.cfg.Site.List().Trim(f.names(), f.cfg.MaxBacklog, f.cfg.MaxBacklogBytes); err != nil {
			f.cfg.Log.Warn("feeds: trimming the out log", "err", err)
		}
		if f.cfg.StatusFile != "" {
			f.writeStatus()
		}
		select {
		case <-f.stop:
			return
		case <-t.C:
		}
	}
}

// Lines are the feeds' states, a line each, as the status file has them:
// peer, mode, address, state, backlog and counts.
func (f *Feeds) Lines() []string {
	var out []string
	for _, st := range f.Status() {
		state := feedState(st)
		if st.Paused {
			state += ",paused"
		}
		line := fmt.Sprintf("%s %s %s %s backlog=%d dropped=%d offered=%d sent=%d refused=%d",
			st.Peer, st.Mode, st.Addr, state, st.Backlog.Records, st.Backlog.Dropped, st.Offered, st.Sent, st.Refused)
		if st.LastError != "" {
			line += fmt.Sprintf(" last_error=%q", st.LastError)
		}
		out = append(out, line)
	}
	return out
}

// feedState names a feed's state: connected; idle, with nothing to send
// and no failure since it last connected (a feeder connects only to send);
// or down.
func feedState(st PeerStatus) string {
	switch {
	case st.Connected:
		return "connected"
	case st.LastError == "" && st.Backlog.Records == 0:
		return "idle"
	}
	return "down"
}

func (f *Feeds) writeStatus() {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s: outgoing feeds of %s\n", time.Now().UTC().Format(time.RFC3339), f.cfg.Site.PathHost())
	for _, l := range f.Lines() {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	tmp := f.cfg.StatusFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(b.String()), 0o644); err == nil {
		os.Rename(tmp, f.cfg.StatusFile)
	}
}

// A feeder passes the out log on to one peer over one streaming
// connection: a batch of CHECKs, then TAKEDHT (or TAKETHIS) for the
// articles the peer wants, and the peer's cursor moved past what it took
// or refused. A peer that cannot be reached is retried with backoff; its
// articles wait in the log.
type feeder struct {
	feeds *Feeds
	peer  Peer
	wake  chan struct{}
	kick  chan struct{} // Pause's: the feed was held or let go
	conn  *nntp.Client
	// out is transfer's write buffer, kept from one transfer to the next
	// (unless a large article grew it past 4 flushes' worth): a feed to a
	// peer sends batch after batch.
	out []byte

	used time.Time // when conn last carried a command

	mu   sync.Mutex
	st   PeerStatus
	live *nntp.Client // fd.conn, for Close to cut a transfer short
}

func (fd *feeder) run() {
	defer fd.feeds.wg.Done()
	defer fd.disconnect()
	site := fd.feeds.cfg.Site
	wait := fd.feeds.cfg.Retry
	for {
		if fd.paused() {
			fd.keepAlive()
			select {
			case <-fd.feeds.stop:
				return
			case <-fd.kick:
			case <-time.After(fd.feeds.cfg.Keepalive):
			}
			continue
		}
		recs, err := site.List().ReadLog(fd.peer.Name, fd.feeds.cfg.Batch, 4<<20)
		if err == nil && len(recs) > 0 {
			var done uint64
			reused := fd.conn != nil
			done, err = fd.send(recs)
			if err != nil && reused && done == 0 {
				// The connection was made before, and may have been
				// closed under us (the peer's idle timeout, a restart):
				// a fresh one, once, before this counts as a failure.
				fd.feeds.cfg.Log.Debug("feed: connection lost, reconnecting", "peer", fd.peer.Name, "err", err)
				fd.disconnect()
				done, err = fd.send(recs)
			}
			if done > 0 {
				site.List().Advance(fd.peer.Name, done)
			}
			if err == nil && done == recs[len(recs)-1].Seq {
				wait = fd.feeds.cfg.Retry
				continue // more may be queued
			}
		}
		wake := fd.wake
		pause := 5 * time.Second
		if err != nil || len(recs) > 0 {
			// The peer failed, or said "later" (431): new articles do
			// not hasten the next try, which backs off.
			if err != nil {
				fd.fail(err)
			}
			wake, pause = nil, wait
			wait = min(2*wait, 30*time.Second)
		}
		if err == nil && len(recs) == 0 {
			fd.keepAlive()
			pause = min(pause, fd.feeds.cfg.Keepalive)
		}
		select {
		case <-fd.feeds.stop:
			return
		case <-wake:
		case <-time.After(pause):
		}
	}
}

// keepAlive sends MODE STREAM again on a connection idle for Keepalive,
// so the peer does not drop it (a feeder's server, innd, answers few
// commands besides the streaming ones, and this one every peer took
// already); one that fails is closed quietly, and the next article
// connects afresh.
func (fd *feeder) keepAlive() {
	if fd.conn == nil || time.Since(fd.used) < fd.feeds.cfg.Keepalive {
		return
	}
	c := fd.conn
	c.Conn().SetDeadline(time.Now().Add(10 * time.Second))
	line, err := c.Cmd("MODE STREAM")
	if code, _ := nntp.ParseStatus(line); err != nil || code != nntp.CodeStreamingPermitted {
		fd.feeds.cfg.Log.Debug("feed: keepalive failed, closing the connection", "peer", fd.peer.Name, "reply", string(line), "err", err)
		fd.disconnect()
		return
	}
	fd.used = time.Now()
}

func (fd *feeder) paused() bool {
	fd.mu.Lock()
	defer fd.mu.Unlock()
	return fd.st.Paused
}

func (fd *feeder) fail(err error) {
	fd.disconnect()
	fd.mu.Lock()
	fd.st.LastError = err.Error()
	fd.mu.Unlock()
	fd.feeds.cfg.Log.Warn("feed: peer unreachable, articles wait in the log", "peer", fd.peer.Name, "err", err)
}

func (fd *feeder) disconnect() {
	if fd.conn != nil {
		fd.conn.Close()
		fd.conn = nil
	}
	fd.mu.Lock()
	fd.st.Connected, fd.live = false, nil
	fd.mu.Unlock()
}

func (fd *feeder) count(fn func(*PeerStatus)) {
	fd.mu.Lock()
	fn(&fd.st)
	fd.mu.Unlock()
}

// connect opens a streaming connection: greeting, AUTHINFO when the link
// has a password, MODE STREAM.
func (fd *feeder) connect() error {
	c, err := nntp.DialTLS(fd.peer.Addr, fd.peer.TLS, time.Now().Add(10*time.Second))
	if err != nil {
		return err
	}
	step := func(cmd string, want nntp.Code) error {
		line, err := c.Cmd(cmd)
		if err != nil {
			return err
		}
		if code, _ := nntp.ParseStatus(line); code != want {
			if strings.HasPrefix(cmd, "AUTHINFO PASS") {
				cmd = "AUTHINFO PASS ..."
			}
			return fmt.Errorf("%s: %q", cmd, line)
		}
		return nil
	}
	g := c.Greeting()
	if !strings.HasPrefix(g, "200") && !strings.HasPrefix(g, "201") {
		c.Close()
		return fmt.Errorf("greeting %q", g)
	}
	if fd.peer.Password != "" && fd.peer.TLS == nil {
		if err = step("AUTHINFO USER "+fd.feeds.cfg.Site.PathHost(), nntp.CodePasswordRequired); err == nil {
			err = step("AUTHINFO PASS "+fd.peer.Password, nntp.CodeAuthAccepted)
		}
	}
	if err == nil {
		err = step("MODE STREAM", nntp.CodeStreamingPermitted)
	}
	if err != nil {
		c.Close()
		return err
	}
	fd.conn, fd.used = c, time.Now()
	fd.mu.Lock()
	fd.st.Connected, fd.st.LastError, fd.live = true, "", c
	fd.st.Connects++
	closing := fd.feeds.closing()
	fd.mu.Unlock()
	if closing {
		return errors.New("feeds closing")
	}
	return nil
}

// wants reports whether the peer is to be offered r: not an article that
// came through it (its name in Path), and one of its groups.
func (fd *feeder) wants(r *usenet.LogRecord) bool {
	if r.MessageID == "" || len(r.Head) == 0 {
		return false // a damaged record
	}
	if r.Announced && fd.peer.Mode == Mesh {
		return false
	}
	a, err := usenet.ParseArticle(r.Head)
	if err != nil {
		return false
	}
	if !r.Posted {
		path, _ := a.Header("Path")
		for _, h := range strings.Split(path, "!") {
			if strings.TrimSpace(h) == fd.peer.Name {
				return false
			}
		}
	}
	if fd.peer.Groups == "" {
		return true
	}
	names, _ := a.Groups()
	return slices.ContainsFunc(names, func(g string) bool { return usenet.Wildmat(fd.peer.Groups, g) })
}

// send offers a batch and returns the sequence number up to which every
// record is settled (taken, refused, or not for this peer).
func (fd *feeder) send(recs []usenet.LogRecord) (uint64, error) {
	var offer []*usenet.LogRecord
	for i := range recs {
		if fd.wants(&recs[i]) {
			offer = append(offer, &recs[i])
		}
	}
	if len(offer) == 0 {
		return recs[len(recs)-1].Seq, nil
	}
	if fd.conn == nil {
		if err := fd.connect(); err != nil {
			return 0, err
		}
	}
	c := fd.conn
	c.Conn().SetDeadline(time.Now().Add(2 * time.Minute))
	fd.used = time.Now()
	var cmds []byte
	for _, r := range offer {
		cmds = append(cmds, "CHECK "...)
		cmds = append(cmds, r.MessageID...)
		cmds = append(cmds, "\r\n"...)
	}
	if _, err := c.Conn().Write(cmds); err != nil {
		return 0, err
	}
	fd.count(func(s *PeerStatus) { s.Offered += uint64(len(offer)) })
	var wanted []*usenet.LogRecord
	later := -1 // the first record the peer asked to offer later
	for i, r := range offer {
		line, err := c.ReadLine()
		if err != nil {
			return 0, err
		}
		switch code, _ := nntp.ParseStatus(line); code {
		case nntp.CodeCheckSend:
			if later < 0 {
				wanted = append(wanted, r)
			}
		case nntp.CodeCheckNotWanted:
			fd.count(func(s *PeerStatus) { s.Refused++ })
		case nntp.CodeCheckLater:
			if later < 0 {
				later = i
			}
		default:
			return 0, fmt.Errorf("CHECK %s: %q", r.MessageID, line)
		}
	}
	if err := fd.transfer(wanted); err != nil {
		return 0, err
	}
	if later >= 0 {
		return offer[later].Seq - 1, nil
	}
	return recs[len(recs)-1].Seq, nil
}

// flushBytes is how much a transfer gathers before it writes.
const flushBytes = 1 << 20

// transfer sends the wanted records (TAKEDHT, or TAKETHIS with the
// article read from the spool) and reads the replies.
func (fd *feeder) transfer(wanted []*usenet.LogRecord) error {
	if len(wanted) == 0 {
		return nil
	}
	c := fd.conn
	out := fd.out[:0]
	defer func() {
		if cap(out) <= 4*flushBytes {
			fd.out = out[:0]
		}
	}()
	flush := func() error {
		_, err := c.Conn().Write(out)
		out = out[:0]
		return err
	}
	sent := wanted[:0:0]
	for _, r := range wanted {
		if fd.peer.Mode != Feed {
			out = usenet.AppendAnnouncement(out, r)
		} else {
			ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
			raw, err := fd.feeds.cfg.Site.Article(ctx, usenet.HistEntry{Key: r.Key})
			cancel()
			if errors.Is(err, fault.ErrNotFound) {
				// Expired or gone from the ring: nothing to feed.
				fd.count(func(s *PeerStatus) { s.Refused++ })
				continue
			}
			if err != nil {
				return fmt.Errorf("reading %s to feed it: %w", r.MessageID, err)
			}
			out = append(out, "TAKETHIS "...)
			out = append(out, r.MessageID...)
			out = append(out, "\r\n"...)
			out = append(out, raw...)
			out = append(out, ".\r\n"...)
		}
		sent = append(sent, r)
		if len(out) >= flushBytes {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	for _, r := range sent {
		line, err := c.ReadLine()
		if err != nil {
			return err
		}
		switch code, _ := nntp.ParseStatus(line); code {
		case nntp.CodeTakeThisOK:
			fd.count(func(s *PeerStatus) { s.Sent++ })
		case nntp.CodeTakeThisRejected:
			fd.count(func(s *PeerStatus) { s.Refused++ })
			fd.feeds.cfg.Log.Debug("feed: peer refused", "peer", fd.peer.Name, "msgid", r.MessageID, "reply", string(line))
		default:
			verb := "TAKEDHT"
			if fd.peer.Mode == Feed {
				verb = "TAKETHIS"
			}
			return fmt.Errorf("%s %s: %q", verb, r.MessageID, line)
		}
	}
	return nil
}
