package bench

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/mail"
	"os"
	"strings"
	"testing"
	"time"

	"triad/internal/nntp"
	"triad/internal/testutil"
)

// bodyLines checks that wire is a block as a server must receive it (CRLF
// lines, every line that starts with a dot stuffed, the terminating line
// at the end) and returns the lines of its text.
func bodyLines(t *testing.T, wire []byte) []string {
	t.Helper()
	s := string(wire)
	if !strings.HasSuffix(s, "\r\n.\r\n") && s != ".\r\n" {
		t.Fatalf("block does not end with CRLF.CRLF: %q", s[max(0, len(s)-20):])
	}
	for _, l := range strings.SplitAfter(strings.TrimSuffix(s, ".\r\n"), "\r\n") {
		if l == "" {
			continue
		}
		if !strings.HasSuffix(l, "\r\n") || strings.Contains(strings.TrimSuffix(l, "\r\n"), "\r") || strings.Count(l, "\n") != 1 {
			t.Fatalf("line not made of text and one CRLF: %q", l)
		}
		if strings.HasPrefix(l, ".") && !strings.HasPrefix(l, "..") {
			// ".x" would be read as "x" and "." alone would end the
			// block: the generator must stuff both.
			t.Fatalf("line %q starts with a single dot: not stuffed", l)
		}
	}
	return strings.Split(strings.TrimSuffix(string(nntp.Unstuff(wire)), "\r\n"), "\r\n")
}

func TestArticleSizesAndHeaders(t *testing.T) {
	date := time.Date(2026, 11, 21, 22, 31, 0, 0, time.UTC)
	sizes := []int{2450, 2451, 4096, 16 << 10, 16<<10 + 1, 240000}
	for n := 287; n < 700; n++ { // every small size, around the 80-byte line width
		sizes = append(sizes, n)
	}
	r := rand.New(rand.NewPCG(1, 2))
	ids := map[string]bool{}
	dotLines, loneDots := 0, 0
	for _, forPost := range []bool{false, true} {
		spec := articleSpec{group: "triad.bench", tag: "triad.1234567890.abcdef01", date: date, forPost: forPost}
		if forPost {
			spec.tag += ".post"
		}
		for i, size := range sizes {
			spec.sizeBytes = size
			a, err := spec.article(i, r)
			if err != nil {
				t.Fatalf("size %d: %v", size, err)
			}
			if len(a.wire) != size {
				t.Fatalf("size %d: article is %d bytes", size, len(a.wire))
			}
			if ids[a.id] {
				t.Fatalf("message-id %s twice", a.id)
			}
			ids[a.id] = true
			if !bytes.HasSuffix(a.wire[:a.bodyAt], []byte("\r\n\r\n")) {
				t.Fatalf("size %d: the body does not start after the empty line", size)
			}

			// The headers parse, and carry what a feeding server needs.
			lines := bodyLines(t, a.wire)
			msg, err := mail.ReadMessage(strings.NewReader(strings.Join(lines, "\r\n") + "\r\n"))
			if err != nil {
				t.Fatalf("size %d: %v", size, err)
			}
			want := map[string]string{"From": "triad bench <bench@example.invalid>", "Newsgroups": "triad.bench", "Message-Id": a.id}
			if !forPost {
				want["Path"] = "bench-feeder.invalid!not-for-mail"
				want["Date"] = "Sat, 21 Nov 2026 22:31:00 +0000"
			} else if msg.Header.Get("Path") != "" || msg.Header.Get("Date") != "" {
				t.Fatalf("an article to POST has Path or Date: %v", msg.Header)
			}
			for k, v := range want {
				if got := msg.Header.Get(k); got != v {
					t.Fatalf("size %d: %s is %q, want %q", size, k, got, v)
				}
			}
			if !strings.HasPrefix(msg.Header.Get("Subject"), "triad bench article ") {
				t.Fatalf("size %d: Subject %q", size, msg.Header.Get("Subject"))
			}
			if !forPost {
				if d, err := msg.Header.Date(); err != nil || !d.Equal(date) {
					t.Fatalf("Date %q: %v, %v", msg.Header.Get("Date"), d, err)
				}
			}
			if _, err := mail.ParseAddress(msg.Header.Get("From")); err != nil {
				t.Fatalf("From: %v", err)
			}

			// Body lines: at most 78 characters of text, 76 of base64.
			maxLine := maxTextLine
			if size > binaryFromBytes {
				maxLine = maxBase64Line
			}
			inBody := false
			for _, l := range lines {
				if !inBody {
					inBody = l == ""
					continue
				}
				if len(l) > maxLine {
					t.Fatalf("size %d: body line of %d characters: %q", size, len(l), l)
				}
				if strings.TrimRight(l, " \t") != l {
					t.Fatalf("size %d: trailing white space in %q", size, l)
				}
				switch {
				case l == ".":
					loneDots++
				case strings.HasPrefix(l, "."):
					dotLines++
				}
			}
		}
	}
	// The generator must exercise the server's unstuffing.
	if dotLines == 0 || loneDots == 0 {
		t.Fatalf("%d lines starting with a dot and %d lone dots in %d articles: want some of each", dotLines, loneDots, len(ids))
	}
}

func TestArticleTooSmall(t *testing.T) {
	spec := articleSpec{group: "triad.bench", tag: "x", date: time.Now(), sizeBytes: 100}
	if _, err := spec.article(0, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Fatal("an article of 100 bytes was made")
	}
	cfg := NNTPConfig{Addr: "127.0.0.1:119", SizeBytes: 286, Articles: 1, Conns: 1, Group: "triad.bench", MaxPhase: time.Second}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "at least") {
		t.Fatalf("Validate of a too-small size: %v", err)
	}
}

// TestReadBlockRoundTrip reads generated articles back as a server would
// send them, one after the other on one connection.
func TestReadBlockRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	var stream []byte
	var arts []article
	for i, size := range []int{300, 2450, 9000, 240000} {
		a, err := articleSpec{group: "g", tag: "t", date: time.Now(), sizeBytes: size}.article(i, r)
		if err != nil {
			t.Fatal(err)
		}
		arts = append(arts, a)
		stream = append(stream, a.wire...)
	}
	// A server that greets and sends the articles one after the other.
	client, server := net.Pipe()
	defer client.Close()
	go func() {
		defer server.Close()
		server.Write(append([]byte("200 ready\r\n"), stream...))
	}()
	c, err := nntp.NewClient(client, nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf []byte
	for _, a := range arts {
		var lines int
		buf, lines, err = c.ReadBlock(buf[:0], maxReplyBlockBytes)
		if err != nil || !bytes.Equal(buf, a.wire) {
			t.Fatalf("%s: read %d bytes (%v), sent %d", a.id, len(buf), err, len(a.wire))
		}
		if want := bytes.Count(a.wire, []byte("\r\n")) - 1; lines != want {
			t.Fatalf("%s: %d lines, want %d", a.id, lines, want)
		}
	}
}

func TestCheckBody(t *testing.T) {
	a, err := articleSpec{group: "g", tag: "t", date: time.Now(), sizeBytes: 2450}.article(7, rand.New(rand.NewPCG(5, 6)))
	if err != nil {
		t.Fatal(err)
	}
	body := a.wire[a.bodyAt:]
	// A server adds headers of its own to what it was fed.
	served := append([]byte("Path: news.example!bench-feeder.invalid!not-for-mail\r\nXref: news.example g:1\r\n"), a.wire...)
	bad := bytes.Clone(body)
	bad[10] ^= 1
	for _, tc := range []struct {
		name, verb, id string
		block          []byte
		ok             bool
	}{
		{"article", "ARTICLE", a.id, served, true},
		{"body", "BODY", a.id, body, true},
		{"no id in the reply", "BODY", "", body, true},
		{"other id", "BODY", "<other@x>", body, false},
		{"changed byte", "BODY", a.id, bad, false},
		{"unstuffed", "BODY", a.id, bytes.ReplaceAll(body, []byte("\r\n.."), []byte("\r\n.")), false},
		{"truncated", "BODY", a.id, body[:len(body)-10], false},
		{"no headers end", "ARTICLE", a.id, []byte("Path: x\r\n.\r\n"), false},
	} {
		if err := checkBody(tc.verb, tc.id, tc.block, &a); (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	if !bytes.Contains(body, []byte("\r\n..")) {
		t.Fatal("no stuffed line in the body: the unstuffed case checks nothing")
	}
}

func TestParseReplyFields(t *testing.T) {
	for _, tc := range []struct {
		line string
		i    int
		id   string
	}{
		{"239 <a@b>", 1, "<a@b>"},
		{"220 17 <a@b> article follows", 2, "<a@b>"},
		{"220 17 a@b", 2, ""},
		{"439", 1, ""},
		{"222 0 <>", 2, ""},
	} {
		if got := replyID([]byte(tc.line), tc.i); got != tc.id {
			t.Errorf("replyID(%q, %d) = %q, want %q", tc.line, tc.i, got, tc.id)
		}
	}
	g, err := parseGroup("211 1200 3 1202 triad.bench")
	if err != nil || g.count != 1200 || g.low != 3 || g.high != 1202 {
		t.Errorf("parseGroup: %+v, %v", g, err)
	}
	for _, bad := range []string{"211 1 2", "211 x 1 2 g", "411 no such group"} {
		if _, err := parseGroup(bad); err == nil {
			t.Errorf("parseGroup(%q) accepted", bad)
		}
	}
}

func TestCheckLoopback(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:1119", true},
		{"127.3.2.1:119", true},
		{"[::1]:119", true},
		{"localhost:119", true},
		{"10.0.0.1:119", false},
		{"0.0.0.0:119", false},
		{"[::]:119", false},
		{"[::ffff:10.0.0.1]:119", false},
		{"192.168.1.1:119", false},
		{"127.0.0.1", false},
		{"127.0.0.1:0", false},
		{"127.0.0.1:nntp", false},
	} {
		if err := checkLoopback(tc.addr); (err == nil) != tc.ok {
			t.Errorf("checkLoopback(%q): %v", tc.addr, err)
		}
	}
}

func TestNNTPConfigValidate(t *testing.T) {
	good := NNTPConfig{Addr: "127.0.0.1:1119", SizeBytes: 2450, Articles: 10, Conns: 1, Group: "triad.bench", MaxPhase: time.Second}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for name, change := range map[string]func(*NNTPConfig){
		"remote":          func(c *NNTPConfig) { c.Addr = "8.8.8.8:119" },
		"no articles":     func(c *NNTPConfig) { c.Articles = 0 },
		"huge":            func(c *NNTPConfig) { c.SizeBytes = MaxNNTPArticleBytes + 1 },
		"too much memory": func(c *NNTPConfig) { c.Articles, c.SizeBytes = 1000, MaxNNTPArticleBytes },
		"no conns":        func(c *NNTPConfig) { c.Conns = 0 },
		"no bound":        func(c *NNTPConfig) { c.MaxPhase = 0 },
		"bad phase":       func(c *NNTPConfig) { c.Phases = []string{"takethis", "ihave"} },
		"bad group":       func(c *NNTPConfig) { c.Group = "a b" },
		"read by what":    func(c *NNTPConfig) { c.ReadBy = "subject" },
		"id without feed": func(c *NNTPConfig) { c.ReadBy, c.Phases = "id", []string{"article"} },
		"pass no user":    func(c *NNTPConfig) { c.Pass = "x" },
	} {
		c := good
		change(&c)
		if err := c.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestNNTPAgainstINN runs the whole generator against a real INN (or any
// NNTP server) at INN_ADDR, which must carry the group INN_GROUP (default
// triad.bench), as scripts/compare-inn.sh sets up:
//
//	INN_ADDR=127.0.0.1:1119 go test ./internal/bench -run INN -v
func TestNNTPAgainstINN(t *testing.T) {
	addr := os.Getenv("INN_ADDR")
	if addr == "" {
		t.Skip("INN_ADDR is not set: no NNTP server to run against (scripts/compare-inn.sh starts INN through the anchor)")
	}
	group := os.Getenv("INN_GROUP")
	if group == "" {
		group = "triad.bench"
	}
	for _, tc := range []struct {
		size, articles int
		readBy         string
	}{
		{2450, 500, "number"},
		{240000, 40, "id"},
	} {
		res, err := NNTP(NNTPConfig{
			Addr: addr, SizeBytes: tc.size, Articles: tc.articles, Conns: 2, Group: group,
			MaxPhase: time.Minute, ReadBy: tc.readBy, Seed: uint64(tc.size),
			Log: t.Logf,
		})
		if err != nil {
			t.Fatalf("size %d: %v", tc.size, err)
		}
		t.Logf("%d bytes: greeting %q", tc.size, res.Greeting)
		posts := tc.articles / 5
		if len(res.Phases) != 9 || res.Over == nil {
			t.Fatalf("size %d: %d phases ran, over %v", tc.size, len(res.Phases), res.Over)
		}
		for _, p := range res.Phases {
			want := tc.articles
			if p.Name == "post" {
				want = posts
			}
			switch {
			case p.Failed != 0 || p.FirstError != "":
				t.Errorf("%s/%d: %d failed: %s", p.Name, p.Conns, p.Failed, p.FirstError)
			case p.Name == "plain":
				if p.Done == 0 || p.Checked != p.Done || p.QuickAck {
					t.Errorf("plain: %+v", p)
				}
			case p.Done != want || p.Offered != want:
				t.Errorf("%s/%d: %d of %d done, want %d", p.Name, p.Conns, p.Done, p.Offered, want)
			case (p.Name == "article" || p.Name == "body") && p.Checked != p.Done:
				// Read by number the newest articles are this run's: every
				// one is checked against what was sent.
				t.Errorf("%s/%d: %d checked of %d", p.Name, p.Conns, p.Checked, p.Done)
			}
			if (p.Name == "takethis" || p.Name == "post") && (p.OpsPerS <= 0 || p.MBps < p.OpsPerS*float64(tc.size)/1e6*0.99) {
				t.Errorf("%s/%d: %.0f art/s but %.2f MB/s of %d-byte articles", p.Name, p.Conns, p.OpsPerS, p.MBps, tc.size)
			}
		}
		if res.Over.Lines < tc.articles+posts || res.Over.LinesPerS <= 0 {
			t.Errorf("OVER: %+v", *res.Over)
		}
	}
}

func TestReplyErrorIsNotIO(t *testing.T) {
	var err error = &nntp.ReplyError{Cmd: "GROUP x", Line: "411 no such group"}
	if isIOError(err) || !isIOError(io.ErrUnexpectedEOF) || isIOError(errors.Join(errors.New("x"), err)) {
		t.Fatal("isIOError mixes replies and broken connections")
	}
	if !strings.Contains(err.Error(), `GROUP x: the server replied "411 no such group"`) {
		t.Fatal(err)
	}
}

// TestParseProcStat reads the CPU times of /proc/PID/stat lines, command
// names with spaces and parentheses among them, and this process's own.
func TestParseProcStat(t *testing.T) {
	line := "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 120 0 0 0 250 75 0 0 20 0 1 0 100 0 0\n"
	got, err := parseProcStat([]byte(line))
	if err != nil || got.CPU != 3250*time.Millisecond || got.Sys != 750*time.Millisecond {
		t.Fatalf("parseProcStat = %+v, %v; want 3.25 s, 0.75 s of it in the kernel", got, err)
	}
	for _, bad := range []string{"", "1 (x) S 1 2", "1 (x) S 1 2 3 4 5 6 7 8 9 10 x 75 0", "1 (x) S 1 2 3 4 5 6 7 8 9 10 -5 75 0"} {
		if _, err := parseProcStat([]byte(bad)); err == nil {
			t.Errorf("parseProcStat(%q) took a malformed line", bad)
		}
	}
	// This process burns CPU; /proc must show at least some of it.
	before, err := procCPU([]int{os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	testutil.WaitFor(t, 5*time.Second, "spinning to show in /proc/self/stat", func() bool {
		now, err := procCPU([]int{os.Getpid()})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 1e7; i++ {
			sink += i
		}
		return now > before
	})
}

var sink int
