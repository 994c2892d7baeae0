package peering

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"triad/internal/nntp/nntptest"
	"triad/internal/testutil"
	"triad/internal/usenet/nntpd"
)

// logBuffer is a log's output that goroutines share.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// idleFeed is one site feeding a server that drops a client silent for
// a second, with the feed's warnings kept in logs.
func idleFeed(t *testing.T, keepalive time.Duration) (*testSite, *standalone, *logBuffer) {
	t.Helper()
	up := startStandalone(t, func(c *nntpd.Config) { c.IdleTimeout = time.Second })
	logs := &logBuffer{}
	sites, _ := startSites(t, 1, func(fc *FeedConfig) {
		fc.Peers = []Peer{{Name: up.site.PathHost(), Addr: up.addr, Mode: Feed}}
		fc.Keepalive = keepalive
		fc.Log = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	return sites[0], up, logs
}

// postAndWait posts at s and waits until up has the article.
func postAndWait(t *testing.T, s *testSite, up *standalone, subject string) {
	t.Helper()
	c := s.dial(t)
	nntptest.Code(t, c.Status("POST"), "340")
	c.SendText("From: p@example.com\r\nNewsgroups: local.test\r\nSubject: " + subject + "\r\n\r\nbody\r\n")
	reply := c.Line()
	nntptest.Code(t, reply, "240")
	id := strings.Fields(reply)[3]
	testutil.WaitFor(t, 10*time.Second, id+" to reach the peer", func() bool {
		_, found, _ := up.site.List().Lookup(id)
		return found
	})
}

// A feed idle for longer than its peer's idle timeout keeps its
// connection (issue 47: after 10 quiet minutes the next article found it
// closed, logged "peer unreachable" and waited out a retry): the feeder
// sends MODE STREAM on a connection idle for Keepalive.
func TestIdleFeedIsKeptAlive(t *testing.T) {
	site, up, logs := idleFeed(t, 100*time.Millisecond)
	postAndWait(t, site, up, "before the quiet")
	time.Sleep(3 * time.Second) // three of the peer's idle timeouts, with no article
	postAndWait(t, site, up, "after the quiet")
	st := site.feeds.Status()[0]
	if st.Connects != 1 || !st.Connected {
		t.Errorf("the feed connected %d times (connected now: %v), want once", st.Connects, st.Connected)
	}
	if l := logs.String(); l != "" {
		t.Errorf("an idle feed logged warnings:\n%s", l)
	}
}

// A connection the peer closed while the feed was quiet is made again
// at the next article without a warning: the peer is not unreachable.
func TestClosedIdleFeedReconnectsQuietly(t *testing.T) {
	site, up, logs := idleFeed(t, time.Hour) // no keepalive within the test
	postAndWait(t, site, up, "before the quiet")
	time.Sleep(3 * time.Second) // the peer drops the connection after 1 s
	postAndWait(t, site, up, "after the quiet")
	if st := site.feeds.Status()[0]; st.Connects != 2 {
		t.Errorf("the feed connected %d times, want twice (the peer closed the first)", st.Connects)
	}
	if l := logs.String(); l != "" {
		t.Errorf("a reconnect after an idle close logged warnings:\n%s", l)
	}
}

// A feed the operator holds (triad news pause) sends nothing; its
// articles wait in the out log and go once it is let go.
func TestHeldFeedWaits(t *testing.T) {
	sites, _ := startSites(t, 2, nil)
	if err := sites[0].feeds.Pause("siteb", true); err != nil {
		t.Fatal(err)
	}
	if err := sites[0].feeds.Pause("nobody", true); err == nil {
		t.Fatal("Pause of a feed that is not there succeeded")
	}
	c := sites[0].dial(t)
	nntptest.Code(t, c.Status("POST"), "340")
	c.SendText("From: p@example.com\r\nNewsgroups: local.test\r\nSubject: held\r\n\r\nbody\r\n")
	reply := c.Line()
	nntptest.Code(t, reply, "240")
	id := strings.Fields(reply)[3]
	// Within a feed's usual delay (tens of ms here), and 10 times over:
	// nothing, since it is held.
	time.Sleep(time.Second)
	if _, found, _ := sites[1].site.List().Lookup(id); found {
		t.Fatal("an article went out on a held feed")
	}
	if st := sites[0].feeds.Status()[0]; !st.Paused || st.Backlog.Records == 0 {
		t.Fatalf("a held feed's status: %+v", st)
	}
	if err := sites[0].feeds.Pause("", false); err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, id+" at siteb once the feed is let go", func() bool {
		_, found, _ := sites[1].site.List().Lookup(id)
		return found
	})
}
