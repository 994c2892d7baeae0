package e2e

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"triad/internal/nntp"
	"triad/internal/proc"
)

// News is a `triad nntp` process (internal/proc runs it).
type News struct {
	*proc.Proc
	Addr string // where it serves NNTP
}

// newsAddr is where `triad nntp` says it serves, on its first line.
var newsAddr = regexp.MustCompile(`on (127\.0\.0\.1:\d+)`)

// StartNews runs `triad nntp` on a free port of 127.0.0.1 over dir, named
// e2e.test in Path unless args say otherwise, and waits for it to say
// where it serves. t's cleanup kills it.
func StartNews(t *testing.T, dir string, args ...string) *News {
	t.Helper()
	p, err := proc.Start(proc.Config{Binary: Build(t), Log: dir + ".log",
		Args: append([]string{"nntp", "--listen", "127.0.0.1:0", "--data", dir, "--pathhost", "e2e.test"}, args...)})
	t.Cleanup(func() {
		if err := p.Kill(); err != nil {
			t.Error(err)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	lines, err := p.WaitOutput("the address it serves", time.Minute, func(lines []string) bool { return len(lines) > 0 })
	if err != nil {
		t.Fatal(err)
	}
	m := newsAddr.FindStringSubmatch(lines[0])
	if m == nil {
		t.Fatalf("triad nntp said %q", lines[0])
	}
	return &News{Proc: p, Addr: m[1]}
}

// PostArticle POSTs article to the news server at addr, fails the test
// unless it is taken (240), and returns the connection, open until the
// test ends.
func PostArticle(t *testing.T, addr, article string) *nntp.Client {
	t.Helper()
	c, err := nntp.Dial(addr, time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if reply, err := c.Cmd("POST"); err != nil || !strings.HasPrefix(string(reply), "340") {
		t.Fatalf("POST: %q %v", reply, err)
	}
	if err := c.SendArticle([]byte(article)); err != nil {
		t.Fatal(err)
	}
	if reply, err := c.ReadLine(); err != nil || !strings.HasPrefix(string(reply), "240") {
		t.Fatalf("after the article: %q %v", reply, err)
	}
	return c
}
