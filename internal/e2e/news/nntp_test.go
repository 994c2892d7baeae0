package news_test

import (
	"bufio"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"triad/internal/e2e"

	"triad/internal/nntp"
)

// TestNNTPWithNntplib has Python's nntplib, a client we did not write,
// post, list and read through a real `triad nntp` process.
func TestNNTPWithNntplib(t *testing.T) {
	if err := exec.Command("python3", "-W", "ignore", "-c", "import nntplib").Run(); err != nil {
		t.Skip("python3 with nntplib (Python 3.12 or older) is not installed")
	}
	p := e2e.StartNews(t, t.TempDir(), "--groups", "local.test,local.other,local.announce:m")
	script := `
import io, sys, nntplib
host, port = sys.argv[1].split(":")
s = nntplib.NNTP(host, int(port))
assert s.getwelcome().startswith("200"), s.getwelcome()
ids = []
for i in range(1, 21):
    groups = "local.test,local.other" if i % 4 == 0 else "local.test"
    art = ("From: Poster <p@example.com>\r\nNewsgroups: %s\r\nSubject: article %d\r\n\r\nline one of %d\r\n.starts with a dot\r\n" % (groups, i, i)).encode()
    resp = s.post(io.BytesIO(art))
    assert resp.startswith("240"), resp
resp, count, first, last, name = s.group("local.test")
assert (count, first, last) == (20, 1, 20), (count, first, last)
resp, count, first, last, name = s.group("local.other")
assert (count, first, last) == (5, 1, 5), (count, first, last)
groups = {g.group: g for g in s.list()[1]}
assert groups["local.test"].last == "20" and groups["local.other"].last == "5", groups
assert groups["local.announce"].flag == "m", groups
try:
    s.post(io.BytesIO(b"From: p@example.com\r\nNewsgroups: local.announce\r\nSubject: x\r\n\r\nbody\r\n"))
    raise SystemExit("unapproved post to a moderated group was accepted")
except nntplib.NNTPTemporaryError as e:
    assert str(e).startswith("441"), e
resp = s.post(io.BytesIO(b"From: p@example.com\r\nNewsgroups: local.announce\r\nApproved: mod@example.com\r\nSubject: x\r\n\r\nbody\r\n"))
assert resp.startswith("240"), resp
s.group("local.test")
resp, overviews = s.over((1, 20))
assert len(overviews) == 20
for num, ov in overviews:
    assert ov["subject"] == "article %d" % num, ov
    assert ov["from"] == "Poster <p@example.com>", ov
    assert int(ov[":lines"]) == 2, ov
    ids.append(ov["message-id"])
resp, info = s.article("7")
assert info.number == 7 and info.message_id == ids[6], (info.number, info.message_id)
assert b"Subject: article 7" in info.lines and info.lines[-1] == b".starts with a dot", info.lines
resp, info = s.head(ids[11])
assert b"Newsgroups: local.test,local.other" in info.lines, info.lines
resp, info = s.body("12")
assert info.lines == [b"line one of 12", b".starts with a dot"], info.lines
resp, subjects = s.xhdr("subject", "18-20")
assert [x[1] for x in subjects] == ["article 18", "article 19", "article 20"], subjects
assert s.stat()[1] == 12
assert s.next()[1] == 13
try:
    s.article("<not-there@example.com>")
    raise SystemExit("missing article was found")
except nntplib.NNTPTemporaryError as e:
    assert str(e).startswith("430"), e
try:
    s.group("no.such.group")
    raise SystemExit("missing group was found")
except nntplib.NNTPTemporaryError as e:
    assert str(e).startswith("411"), e
s.quit()
print("nntplib ok")
`
	out, err := exec.Command("python3", "-W", "ignore", "-c", script, p.Addr).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "nntplib ok") {
		t.Fatalf("nntplib: %v\n%s", err, out)
	}
}

// TestNNTPCrashDuringIngest SIGKILLs the server while a streaming feed
// runs: after a restart every article it acknowledged is readable and in
// the overview, and the overview lists nothing that cannot be read.
func TestNNTPCrashDuringIngest(t *testing.T) {
	dir := t.TempDir()
	p := e2e.StartNews(t, dir, "--groups", "local.test")
	feed, err := nntp.Dial(p.Addr, time.Now().Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer feed.Close()
	if l, err := feed.Cmd("MODE STREAM"); err != nil || !strings.HasPrefix(string(l), "203 ") {
		t.Fatalf("MODE STREAM: %q, %v", l, err)
	}
	nc := feed.Conn()
	const offered = 20000
	go func() {
		w := bufio.NewWriter(nc)
		for i := 0; i < offered; i++ {
			fmt.Fprintf(w, "TAKETHIS <c%d@e2e.test>\r\nPath: feeder!not-for-mail\r\nFrom: f@e2e.test\r\nNewsgroups: local.test\r\n"+
				"Subject: crash %d\r\nDate: Sat, 21 Nov 2026 10:00:00 +0000\r\nMessage-ID: <c%d@e2e.test>\r\n\r\n%s\r\n.\r\n",
				i, i, i, strings.Repeat("body text ", 100))
			if w.Flush() != nil {
				return
			}
		}
	}()
	var acked []string
	for len(acked) < offered {
		nc.SetDeadline(time.Now().Add(30 * time.Second))
		l, err := feed.ReadLine()
		if err != nil {
			break
		}
		if code, _ := nntp.ParseStatus(l); code != nntp.CodeTakeThisOK {
			t.Fatalf("TAKETHIS: %q", l)
		}
		acked = append(acked, strings.Fields(string(l))[1])
		if len(acked) == 2000 {
			if err := p.Signal(syscall.SIGKILL); err != nil { // replies already in flight are still read
				t.Error(err)
			}
		}
	}
	if err := p.Kill(); err != nil { // waits for the exit
		t.Fatal(err)
	}
	if len(acked) >= offered {
		t.Fatalf("all %d articles went in before the kill: nothing was tested", offered)
	}
	t.Logf("%d of %d articles acknowledged before SIGKILL", len(acked), offered)

	p = e2e.StartNews(t, dir, "--groups", "local.test")
	c, err := nntp.Dial(p.Addr, time.Now().Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cmd := func(format string, args ...any) string {
		c.Conn().SetDeadline(time.Now().Add(30 * time.Second))
		l, err := c.Cmd(fmt.Sprintf(format, args...))
		if err != nil {
			t.Fatal(err)
		}
		return string(l)
	}
	block := func() []string {
		b, _, err := c.ReadBlock(nil, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.TrimSuffix(string(nntp.Unstuff(b)), "\r\n")
		if text == "" {
			return nil
		}
		return strings.Split(text, "\r\n")
	}
	if l := cmd("GROUP local.test"); !strings.HasPrefix(l, "211 ") {
		t.Fatalf("GROUP: %q", l)
	}
	if l := cmd("OVER 1-"); !strings.HasPrefix(l, "224") {
		t.Fatalf("OVER: %q", l)
	}
	listed := map[string]string{}
	for _, l := range block() {
		f := strings.Split(l, "\t")
		listed[f[4]] = f[0]
	}
	for _, id := range acked {
		if listed[id] == "" {
			t.Fatalf("acknowledged %s is not in the overview", id)
		}
	}
	for id, num := range listed {
		if l := cmd("ARTICLE %s", num); !strings.HasPrefix(l, "220 "+num+" "+id) {
			t.Fatalf("listed article %s (%s) cannot be read: %q", num, id, l)
		}
		block()
	}
	t.Logf("after restart: %d listed, all readable; all %d acknowledged listed", len(listed), len(acked))
}
