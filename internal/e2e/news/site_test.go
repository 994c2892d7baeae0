package news_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"triad/internal/e2e"

	"triad/internal/nntp"
	"triad/internal/proc"
)

// startSites runs n `triad site` processes (a node and its news server
// each) on consecutive free ports of 127.0.0.1, peered in a full mesh,
// and waits until each serves news. It returns them and the news
// addresses.
func startSites(t *testing.T, n int) ([]*proc.Proc, []string) {
	t.Helper()
	bin, dir := e2e.Build(t), t.TempDir()
	nodePort, newsPort := e2e.ConsecutiveFreePorts(t, n), e2e.ConsecutiveFreePorts(t, n)
	var addrs []string
	for i := range n {
		addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", newsPort+i))
	}
	var sites []*proc.Proc
	ring := &e2e.Cluster{T: t, Bin: bin, Dir: dir} // its checks, over the sites' nodes
	for i := range n {
		var peers strings.Builder
		for j := range n {
			if j != i {
				fmt.Fprintf(&peers, "[[peer]]\nname = \"site%d\"\naddr = %q\nmode = \"mesh\"\nsecret = \"s3cret\"\n\n", j+1, addrs[j])
			}
		}
		peerFile := filepath.Join(dir, fmt.Sprintf("peers%d", i))
		if err := os.WriteFile(peerFile, []byte(peers.String()), 0o600); err != nil {
			t.Fatal(err)
		}
		args := []string{"site", "--listen", addrs[i], "--data", filepath.Join(dir, fmt.Sprintf("site%d", i+1)),
			"--pathhost", fmt.Sprintf("site%d", i+1), "--peers", peerFile, "--groups", "local.test",
			"--node-listen", fmt.Sprintf("127.0.0.1:%d", nodePort+i), "--node-vnodes", "2"}
		if i > 0 {
			args = append(args, "--node-join", fmt.Sprintf("127.0.0.1:%d", nodePort))
		}
		p := proc.New(proc.Config{Binary: bin, Args: args, Log: filepath.Join(dir, fmt.Sprintf("site%d.log", i+1))})
		t.Cleanup(func() {
			if err := p.Kill(); err != nil {
				t.Error(err)
			}
		})
		startSite(t, p)
		sites = append(sites, p)
		ring.Procs = append(ring.Procs, &e2e.Node{Proc: p, Name: fmt.Sprintf("site%d", i+1), Addr: fmt.Sprintf("127.0.0.1:%d", nodePort+i), IDs: e2e.ParseIDs(p.Lines())})
	}
	// The feed starts once every successor list is whole: a put needs
	// two live hosts for its key.
	ring.WaitConsistent("three sites started", time.Minute)
	return sites, addrs
}

// startSite starts (or restarts) a `triad site` process and waits until it
// serves news.
func startSite(t *testing.T, p *proc.Proc) {
	t.Helper()
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.WaitLine("triad site: serving news on", time.Minute); err != nil {
		t.Fatalf("%v\n%s", err, p.Tail(20))
	}
}

// TestSiteProcessCrashDuringFeed feeds articles to the first of three
// `triad site` processes, whose news server hands each article to the
// node in its own process, and SIGKILLs that site mid-feed: after the
// same command starts it again, every article it answered 239 reads back
// byte for byte there, none is listed that cannot be read, the other
// sites list what it acknowledged, and the rest can be fed again.
func TestSiteProcessCrashDuringFeed(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three triad site processes; skipped in -short mode")
	}
	start := time.Now()
	sites, addrs := startSites(t, 3)
	arts := newsArticles("site", 300, "site1")
	fed := feed(t, addrs[0], arts, time.Now().Add(2*time.Minute), func(acked int) {
		if acked == 100 {
			if err := sites[0].Signal(syscall.SIGKILL); err != nil {
				t.Error(err)
			}
		}
	})
	if err := sites[0].Kill(); err != nil { // waits for the exit
		t.Fatal(err)
	}
	if len(fed.acked) >= len(arts.IDs) {
		t.Fatal("every article went in before the kill: nothing was tested")
	}
	t.Logf("%d articles acknowledged before SIGKILL", len(fed.acked))
	startSite(t, sites[0])
	checkNews(t, addrs[0], arts, fed)
	again := feed(t, addrs[0], arts, time.Now().Add(2*time.Minute), nil)
	if n := len(again.acked) + len(again.refused); n != len(arts.IDs) {
		t.Fatalf("fed again after the restart: %d of %d answered", n, len(arts.IDs))
	}
	for id := range fed.acked {
		if again.acked[id] {
			t.Fatalf("%s was acknowledged before the crash and taken again after it", id)
		}
	}
	all := feedOutcome{acked: union(fed.acked, again.acked), refused: again.refused}
	checkNews(t, addrs[0], arts, all)
	waitAnnounced(t, addrs[2], arts, all, time.Minute)
	checkNews(t, addrs[2], arts, all)
	t.Logf("whole test took %v", time.Since(start).Round(time.Millisecond))
}

// waitAnnounced waits until the news server at addr lists in local.test
// at least the articles fed.acked holds, as announcements reach it.
func waitAnnounced(t *testing.T, addr string, arts fedArticles, fed feedOutcome, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	c, err := nntp.Dial(addr, deadline)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Conn().SetDeadline(deadline)
	count := 0
	for {
		l, err := c.Cmd("GROUP local.test")
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(string(l))
		if len(f) < 2 || f[0] != "211" {
			t.Fatalf("GROUP local.test at %s: %q", addr, l)
		}
		if count, err = strconv.Atoi(f[1]); err != nil {
			t.Fatalf("GROUP local.test at %s: %q", addr, l)
		}
		if count >= len(fed.acked) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s lists %d articles after %v, want the %d acknowledged at site 1", addr, count, within, len(fed.acked))
		}
		time.Sleep(50 * time.Millisecond)
	}
}
