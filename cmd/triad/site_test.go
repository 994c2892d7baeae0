package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"triad/internal/newsd"
	"triad/internal/noded"
)

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

// --sync-period is the site's promise and its node's: the journal and the
// node's copies both sync within the period, unless the node is told
// otherwise.
func TestSiteSyncPeriodIsTheNodes(t *testing.T) {
	for _, tc := range []struct {
		args       []string
		site, node time.Duration
	}{
		{nil, 0, 0},
		{[]string{"--sync-period", "20ms"}, 20 * time.Millisecond, 20 * time.Millisecond},
		{[]string{"--sync-period", "20ms", "--node-sync-period", "5ms"}, 20 * time.Millisecond, 5 * time.Millisecond},
	} {
		news, node := newsd.DefaultOptions(), noded.DefaultOptions()
		fs := flag.NewFlagSet("site", flag.ContinueOnError)
		nodeFlags := registerSiteFlags(fs, &news, &node)
		args := append([]string{"--data", t.TempDir(), "--node-listen", "127.0.0.1:4001"}, tc.args...)
		if err := parseSite(fs, nodeFlags, args, &news, &node); err != nil {
			t.Fatal(err)
		}
		if news.SyncPeriod != tc.site || node.SyncPeriod != tc.node {
			t.Errorf("%v: the site's period %v, the node's %v; want %v and %v", tc.args, news.SyncPeriod, node.SyncPeriod, tc.site, tc.node)
		}
	}
}
