package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"triad/internal/e2e"

	"triad/internal/newsd"
	"triad/internal/nntp"
	"triad/internal/noded"
	"triad/internal/proc"
)

// startSites runs n `triad site` processes (a node and its news server
// each) on consecutive free ports of 127.0.0.1, peered in a full mesh,
// and waits until each serves news. It returns them and the news
// addresses.
func startSites(t *testing.T, n int) ([]*proc.Proc, []string) {
	t.Helper()
	bin, dir := e2e.Build(t), t.TempDir()
	nodePort, newsPort := consecutiveFreePorts(t, n), consecutiveFreePorts(t, n)
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

// TestSiteMemoryLimitLeavesRoomForCacheAndNode: a site's soft memory
// limit is its news server's on top of the article cache, plus the
// node's budgets. A limit without the cache had the collector running
// without pause once reads filled the cache (a site took 1,300 articles a
// second rather than 7,900).
func TestSiteMemoryLimitLeavesRoomForCacheAndNode(t *testing.T) {
	news, node := newsd.DefaultOptions(), noded.DefaultOptions()
	fs := flag.NewFlagSet("site", flag.ContinueOnError)
	nodeFlags := registerSiteFlags(fs, &news, &node)
	args := []string{"--data", t.TempDir(), "--cache-mb", "100", "--memory-limit-mb", "50", "--node-listen", "127.0.0.1:4001", "--node-vnodes", "3"}
	if err := parseSite(fs, nodeFlags, args, &news, &node); err != nil {
		t.Fatal(err)
	}
	if node.Vnodes != 3 || node.Listen != "127.0.0.1:4001" {
		t.Errorf("the node's options: %d vnodes on %q, want 3 on 127.0.0.1:4001", node.Vnodes, node.Listen)
	}
	if got, want := siteMemoryLimitMB(&news), 50+100+nodeMemoryMB; got != want {
		t.Errorf("soft memory limit %d MiB, want %d (news server, cache and node)", got, want)
	}
	news.MemoryLimitMB = 0
	if got := siteMemoryLimitMB(&news); got != 0 {
		t.Errorf("soft memory limit %d MiB with none asked for, want 0", got)
	}
}

// TestSiteFlagsAndConfig: triad site takes the news server's flags as
// they are and the node's with node- in front; a --config file's [nntp]
// and [node] tables set both where no flag does, and a bad value names
// its line in the file or its node- flag.
func TestSiteFlagsAndConfig(t *testing.T) {
	dir := t.TempDir()
	conf := filepath.Join(dir, "site.toml")
	write := func(text string) {
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var said strings.Builder // what a usage error prints
	parse := func(args ...string) (newsd.Options, noded.Options, error) {
		news, node := newsd.DefaultOptions(), noded.DefaultOptions()
		fs := flag.NewFlagSet("site", flag.ContinueOnError)
		said.Reset()
		fs.SetOutput(&said)
		nodeFlags := registerSiteFlags(fs, &news, &node)
		return news, node, parseSite(fs, nodeFlags, args, &news, &node)
	}
	write("[nntp]\ncache-mb = 10\n\n[node]\nlisten = \"127.0.0.1:4009\"\nvnodes = 5\n")
	news, node, err := parse("--config", conf, "--data", dir, "--node-vnodes", "3")
	if err != nil {
		t.Fatal(err)
	}
	if node.Vnodes != 3 || node.Listen != "127.0.0.1:4009" || news.CacheMB != 10 {
		t.Errorf("vnodes %d (flag: 3), listen %q (file), cache %d MiB (file: 10)", node.Vnodes, node.Listen, news.CacheMB)
	}
	if want := filepath.Join(dir, "node"); node.Data != want {
		t.Errorf("the node's data in %q, want %q", node.Data, want)
	}
	if _, _, err := parse("--data", dir, "--node-listen", "127.0.0.1:4009", "--node", "127.0.0.1:4010"); err == nil {
		t.Error("--node was taken: a site's node is its own")
	}
	if _, _, err := parse("--data", dir, "--node-listen", "127.0.0.1:4009", "--node-vnodes", "100"); err == nil || !strings.Contains(said.String(), "--node-vnodes 100") {
		t.Errorf("a bad --node-vnodes: %v, %q, want an error naming --node-vnodes", err, said.String())
	}
	// A file written for triad node and triad nntp names the node in
	// [nntp] as well: the site's own node is accepted, another is not.
	write("[nntp]\nnode = \"127.0.0.1:4009\"\n\n[node]\nlisten = \"127.0.0.1:4009\"\n")
	if _, _, err := parse("--config", conf, "--data", dir); err != nil {
		t.Errorf("[nntp] node naming the site's own node: %v %q", err, said.String())
	}
	write("[nntp]\nnode = \"127.0.0.1:4010\"\n\n[node]\nlisten = \"127.0.0.1:4009\"\n")
	if _, _, err := parse("--config", conf, "--data", dir); err == nil || !strings.Contains(said.String(), conf+":2") {
		t.Errorf("[nntp] node naming another node: %v %q, want an error naming %s:2", err, said.String(), conf)
	}
	write("[node]\nlisten = \"127.0.0.1:4009\"\nvnodes = 100\n")
	if _, _, err := parse("--config", conf, "--data", dir); err == nil || !strings.Contains(said.String(), conf+":3") {
		t.Errorf("a bad vnodes in [node]: %v, %q, want an error naming %s:3", err, said.String(), conf)
	}
}
