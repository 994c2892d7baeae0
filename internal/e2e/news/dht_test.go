package news_test

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"triad/internal/e2e"

	"triad/internal/id"
	"triad/internal/localdeploy"
	"triad/internal/nntp"
)

// End-to-end tests of the news server on the DHT spool: `triad nntp
// --node` in front of `triad node` processes, and the news server inside
// `triad up`, fed by a streaming feeder while a process is SIGKILLed.

// fedArticles are the articles a test feeds, by message-id, in order.
type fedArticles struct {
	IDs      []string
	text     map[string]string // as sent, CRLF lines, not dot-stuffed
	pathHost string            // the news server's name in Path
}

// newsArticles makes n articles for local.test of 1 to 8 KB, each its own
// bytes (so each its own DHT key), with a dot-led body line, for the news
// server named pathHost.
func newsArticles(prefix string, n int, pathHost string) fedArticles {
	f := fedArticles{text: map[string]string{}, pathHost: pathHost}
	for i := range n {
		id := fmt.Sprintf("<%s%d@e2e.test>", prefix, i)
		var body strings.Builder
		fmt.Fprintf(&body, ".a dot-led line in %s\r\n", id)
		for j := range 10 + i%7*20 {
			fmt.Fprintf(&body, "%s line %d: %s\r\n", id, j, strings.Repeat("news ", 10))
		}
		f.IDs = append(f.IDs, id)
		f.text[id] = "Path: feeder.e2e!not-for-mail\r\nFrom: feeder@e2e.test\r\nNewsgroups: local.test\r\n" +
			"Subject: " + prefix + " " + id + "\r\nDate: Sat, 21 Nov 2026 10:00:00 +0000\r\nMessage-ID: " + id + "\r\n\r\n" + body.String()
	}
	return f
}

// stored is an article as the news server keeps and serves it: its own
// name first in the Path.
func (f fedArticles) stored(id string) string {
	return strings.Replace(f.text[id], "Path: ", "Path: "+f.pathHost+"!", 1)
}

// key is the article's DHT key: the hash of what is stored, which is the
// wire form (dot-stuffed, without the terminating line) sealed: body, then
// head (with its empty line), then the head's length and "ART1"
// (docs/usenet.md, "Announcements that cannot lie").
func (f fedArticles) key(msgid string) id.ID {
	b := nntp.AppendBlock(nil, []byte(f.stored(msgid)))
	wireForm := b[:len(b)-len(".\r\n")]
	end := bytes.Index(wireForm, []byte("\r\n\r\n")) + len("\r\n\r\n")
	head, body := wireForm[:end], wireForm[end:]
	sealed := append(append(bytes.Clone(body), head...), binary.BigEndian.AppendUint32(nil, uint32(len(head)))...)
	return id.Key(append(sealed, "ART1"...))
}

// feedDialTimeout bounds a feed's connection and greeting.
var feedDialTimeout = 10 * time.Second

// feedOutcome is what a feed was told.
type feedOutcome struct {
	acked   map[string]bool // 239: stored and listed
	refused map[string]bool // 439: a duplicate (a 239 lost with a connection) or refused
	rounds  int             // connections used
}

// feed offers the articles with streaming TAKETHIS, pipelined, as innfeed
// does: when the server answers 400 or the connection drops, it
// reconnects and offers again every article left unanswered, until each is
// answered 239 or 439, the deadline passes or the server cannot be
// reached. onAck runs in the reading goroutine after each 239, with the
// number of 239s so far.
func feed(t *testing.T, addr string, arts fedArticles, deadline time.Time, onAck func(acked int)) feedOutcome {
	t.Helper()
	out := feedOutcome{acked: map[string]bool{}, refused: map[string]bool{}}
	left := arts.IDs
	backoff := 50 * time.Millisecond
	// A loop of its own, not testutil.Poll: each pass is a feeder's
	// session, and the pause after a session with no answer is innfeed's
	// doubling backoff, which is what the tests feed with.
	for len(left) > 0 && time.Now().Before(deadline) {
		out.rounds++
		c, err := nntp.Dial(addr, time.Now().Add(feedDialTimeout))
		if err != nil {
			t.Logf("round %d: %v; %d articles left unanswered", out.rounds, err, len(left))
			return out
		}
		// The dial's deadline covers reads and writes; a session lasts
		// until the feed's. (Writes that failed at the dial's left the
		// server waiting for the rest of an article and the reader for
		// its reply, until the feed's deadline.)
		c.Conn().SetDeadline(deadline)
		if l, err := c.Cmd("MODE STREAM"); err != nil || !strings.HasPrefix(string(l), "203") {
			t.Fatalf("MODE STREAM: %q, %v", l, err)
		}
		offered := left
		wrote := make(chan error, 1)
		go func() {
			w := bufio.NewWriter(c.Conn())
			for _, id := range offered {
				w.WriteString("TAKETHIS " + id + "\r\n")
				w.Write(nntp.AppendBlock(nil, []byte(arts.text[id])))
				if err := w.Flush(); err != nil {
					wrote <- err // the server closed the feed, or the deadline passed
					return
				}
			}
			wrote <- nil
		}()
		answered := 0
		for _, id := range offered {
			c.Conn().SetReadDeadline(deadline)
			l, err := c.ReadLine()
			if err != nil {
				break
			}
			code, _ := nntp.ParseStatus(l)
			if code == nntp.CodeUnavailable {
				t.Logf("round %d: %q after %d answers; offering the rest again", out.rounds, l, answered)
				break
			}
			if f := strings.Fields(string(l)); len(f) < 2 || f[1] != id {
				t.Fatalf("reply %q, want one for %s (replies come in command order)", l, id)
			}
			switch code {
			case nntp.CodeTakeThisOK:
				out.acked[id] = true
				if onAck != nil {
					onAck(len(out.acked))
				}
			case nntp.CodeTakeThisRejected:
				out.refused[id] = true
			default:
				t.Fatalf("TAKETHIS %s: %q", id, l)
			}
			answered++
		}
		c.Close()
		if err := <-wrote; err != nil && answered < len(offered) {
			t.Logf("round %d: writing the feed: %v", out.rounds, err)
		}
		if answered == 0 {
			// A feeder waits before it offers the same articles again
			// (innfeed sleeps its connection); twice as long each time.
			time.Sleep(backoff)
			backoff = min(2*backoff, 2*time.Second)
		}
		var rest []string
		for _, id := range left {
			if !out.acked[id] && !out.refused[id] {
				rest = append(rest, id)
			}
		}
		left = rest
	}
	return out
}

// checkNews reads every article fed back through the news server at addr,
// by message-id and by its number in the overview: each one answered 239
// must come back byte for byte and be listed; each other one must be
// absent or whole; and everything listed must be an article fed, whole.
func checkNews(t *testing.T, addr string, arts fedArticles, fed feedOutcome) {
	t.Helper()
	c, err := nntp.Dial(addr, time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cmd := func(line string) string {
		t.Helper()
		c.Conn().SetDeadline(time.Now().Add(60 * time.Second))
		l, err := c.Cmd(line)
		if err != nil {
			t.Fatal(err)
		}
		return string(l)
	}
	text := func() string {
		t.Helper()
		b, _, err := c.ReadBlock(nil, 16<<20)
		if err != nil {
			t.Fatal(err)
		}
		return string(nntp.Unstuff(b))
	}
	if l := cmd("GROUP local.test"); !strings.HasPrefix(l, "211 ") {
		t.Fatalf("GROUP: %q", l)
	}
	listed := map[string]string{} // message-id -> number
	if l := cmd("OVER 1-"); strings.HasPrefix(l, "224") {
		for _, line := range strings.Split(strings.TrimSuffix(text(), "\r\n"), "\r\n") {
			if f := strings.Split(line, "\t"); len(f) > 4 {
				listed[f[4]] = f[0]
			}
		}
	} else if !strings.HasPrefix(l, "423") {
		t.Fatalf("OVER: %q", l)
	}
	absent := 0
	for _, id := range arts.IDs {
		l := cmd("ARTICLE " + id)
		switch {
		case strings.HasPrefix(l, "220 "):
			if got := text(); got != arts.stored(id) {
				t.Fatalf("ARTICLE %s: %d bytes that are not the %d stored (acknowledged: %v)", id, len(got), len(arts.stored(id)), fed.acked[id])
			}
			if listed[id] == "" {
				t.Fatalf("%s is readable by message-id but not in the overview", id)
			}
		case strings.HasPrefix(l, "430 ") && !fed.acked[id]:
			absent++
		default:
			t.Fatalf("ARTICLE %s (acknowledged: %v): %q", id, fed.acked[id], l)
		}
	}
	for id, num := range listed {
		if arts.text[id] == "" {
			t.Fatalf("the overview lists %s (number %s), which was never fed", id, num)
		}
		if l := cmd("ARTICLE " + num); !strings.HasPrefix(l, "220 "+num+" "+id) {
			t.Fatalf("listed article %s (%s): %q", num, id, l)
		}
		if got := text(); got != arts.stored(id) {
			t.Fatalf("ARTICLE %s (%s): %d bytes that are not the %d stored", num, id, len(got), len(arts.stored(id)))
		}
	}
	t.Logf("%d of %d articles acknowledged, %d refused as duplicates; %d listed, all whole; %d absent", len(fed.acked), len(arts.IDs), len(fed.refused), len(listed), absent)
}

// TestNNTPOnDHTReplicaKilled runs `triad nntp --node` on a ring of four
// `triad node` processes (two replicas per article) and SIGKILLs one node,
// a replica of some of what was already stored, while a streaming feed
// runs. Every article the server answered 239 reads back byte for byte,
// right away and once the ring has healed; none is listed that cannot be
// read; and the feed, re-offering what went unanswered as innfeed would,
// gets every article in.
func TestNNTPOnDHTReplicaKilled(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 5 processes; skipped in -short mode")
	}
	start := time.Now()
	d := e2e.StartDHash(t, 4, "--redundancy", "replicas", "--replicas", "2")
	news := e2e.StartNews(t, filepath.Join(d.Dir, "news"), "--node", d.Nodes[0].Addr, "--groups", "local.test")
	arts := newsArticles("dht", 400, "e2e.test") // e2e.StartNews's --pathhost
	victim := d.Nodes[2]
	fed := feed(t, news.Addr, arts, time.Now().Add(3*time.Minute), func(acked int) {
		if acked != 100 {
			return
		}
		held := 0
		for _, msgid := range arts.IDs[:acked] {
			for _, h := range e2e.Holding(d.Stat(d.Nodes[1], arts.key(msgid))) {
				if h.Node.Addr == victim.Addr {
					held++
				}
			}
		}
		if held == 0 {
			t.Fatalf("%s holds none of the %d articles acknowledged: killing it tests nothing", victim.Name, acked)
		}
		victim.Crash(t)
		t.Logf("SIGKILLed %s, a replica of %d of the %d articles acknowledged", victim.Name, held, acked)
	})
	if victim.Running() {
		t.Fatalf("the feed ended after %d acknowledgements, before the kill", len(fed.acked))
	}
	if n := len(fed.acked) + len(fed.refused); n != len(arts.IDs) {
		t.Fatalf("%d of %d articles answered after %d connections: the feed did not get through after one node died\n%s", n, len(arts.IDs), fed.rounds, d.Logs())
	}
	t.Logf("feed done over %d connection(s) after %v", fed.rounds, time.Since(start).Round(time.Millisecond))
	checkNews(t, news.Addr, arts, fed)
	d.WaitLists("after the SIGKILL", 60*time.Second)
	checkNews(t, news.Addr, arts, fed)
	t.Logf("whole test took %v", time.Since(start).Round(time.Millisecond))
}

// TestUpNewsCrashDuringFeed SIGKILLs a whole `triad up` (three nodes and
// the news server, articles kept in the ring) while a streaming feed
// runs, and starts it again on the same data: every article answered 239
// reads back byte for byte, none is listed that cannot be read, and the
// rest can be fed again.
func TestUpNewsCrashDuringFeed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs triad up twice; skipped in -short mode")
	}
	start := time.Now()
	bin := e2e.Build(t)
	port := e2e.ConsecutiveFreePorts(t, 3)
	newsPort := e2e.ConsecutiveFreePorts(t, 3)
	args := []string{"--sites", "3", "--port", fmt.Sprint(port), "--nntp-port", fmt.Sprint(newsPort), "--data", filepath.Join(t.TempDir(), "data")}
	addr := fmt.Sprintf("127.0.0.1:%d", newsPort)
	arts := newsArticles("up", 400, localdeploy.SiteName(0))

	up := e2e.StartUp(t, bin, args...)
	up.WaitFor("Press Ctrl-C") // started, the ring consistent before the sites
	// A POST answered 240 a moment before the kill: its listing was in the
	// journal, and news.db's checkpoint (every 50 ms) most likely had not
	// run yet.
	const posted = "<posted-before-the-kill@e2e.test>"
	fed := feed(t, addr, arts, time.Now().Add(2*time.Minute), func(acked int) {
		if acked == 150 {
			e2e.PostArticle(t, addr, "From: poster@e2e.test\r\nNewsgroups: local.general\r\nSubject: posted, then SIGKILL\r\n"+
				"Message-ID: "+posted+"\r\n\r\nacknowledged a moment before the kill\r\n")
			if err := up.Signal(syscall.SIGKILL); err != nil {
				t.Error(err)
			}
		}
	})
	if err := up.Kill(); err != nil { // waits for the exit
		t.Fatal(err)
	}
	if len(fed.acked) >= len(arts.IDs) {
		t.Fatal("every article went in before the kill: nothing was tested")
	}
	t.Logf("%d articles acknowledged before SIGKILL", len(fed.acked))

	up = e2e.StartUp(t, bin, args...)
	up.WaitFor("Press Ctrl-C") // started, the ring consistent before the sites
	checkNews(t, addr, arts, fed)
	checkListed(t, addr, "local.general", posted)
	again := feed(t, addr, arts, time.Now().Add(2*time.Minute), nil)
	if n := len(again.acked) + len(again.refused); n != len(arts.IDs) {
		t.Fatalf("fed again after the restart: %d of %d answered", n, len(arts.IDs))
	}
	for id := range fed.acked {
		if again.acked[id] {
			t.Fatalf("%s was acknowledged before the crash and taken again after it", id)
		}
	}
	checkNews(t, addr, arts, feedOutcome{acked: union(fed.acked, again.acked), refused: again.refused})
	up.Interrupt()
	t.Logf("whole test took %v", time.Since(start).Round(time.Millisecond))
}

// checkListed fails the test unless the news server at addr lists msgid
// in group (OVER) and serves it by that number.
func checkListed(t *testing.T, addr, group, msgid string) {
	t.Helper()
	c, err := nntp.Dial(addr, time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Conn().SetDeadline(time.Now().Add(60 * time.Second))
	if l, err := c.Cmd("GROUP " + group); err != nil || !strings.HasPrefix(string(l), "211 ") {
		t.Fatalf("GROUP %s: %q %v", group, l, err)
	}
	l, err := c.Cmd("OVER 1-")
	if err != nil || !strings.HasPrefix(string(l), "224") {
		t.Fatalf("%s is not listed in %s: OVER %q %v", msgid, group, l, err)
	}
	b, _, err := c.ReadBlock(nil, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\r\n") {
		if f := strings.Split(line, "\t"); len(f) > 4 && f[4] == msgid {
			if l, err := c.Cmd("STAT " + f[0]); err != nil || !strings.HasPrefix(string(l), "223 "+f[0]+" "+msgid) {
				t.Fatalf("STAT %s (%s): %q %v", f[0], msgid, l, err)
			}
			return
		}
	}
	t.Fatalf("%s is not in %s's overview: %q", msgid, group, b)
}

func union(a, b map[string]bool) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}
