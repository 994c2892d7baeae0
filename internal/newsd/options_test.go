package newsd

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"triad/internal/config"
	"triad/internal/usenet/peering"
)

// The defaults are a site that runs; the flags set the fields they are
// bound to; each bad value is refused naming its flag.
func TestOptions(t *testing.T) {
	o := DefaultOptions()
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults: %v", err)
	}
	fs := flag.NewFlagSet("nntp", flag.ContinueOnError)
	o.RegisterFlags(fs)
	if err := fs.Parse([]string{"--groups", "a.b:m,c.d", "--expire", "a.*=2;*=30", "--node", "127.0.0.1:4001"}); err != nil {
		t.Fatal(err)
	}
	set, err := o.settings()
	if err != nil {
		t.Fatal(err)
	}
	if len(set.groups) != 2 || set.groups[0] != (groupSpec{"a.b", "m"}) || len(set.rules) != 2 || set.rules[0].Keep != 48*time.Hour {
		t.Errorf("settings %+v", set)
	}
	for _, tc := range []struct {
		set  func(*Options)
		want string
	}{
		{func(o *Options) { o.Groups = "a..b" }, "--groups"},
		{func(o *Options) { o.Groups = "a.b:x" }, "--groups"},
		{func(o *Options) { o.MaxArticle = 10 }, "--max-article"},
		{func(o *Options) { o.IdleTimeout = time.Minute }, "--idle-timeout"},
		{func(o *Options) { o.CachePolicy = "random" }, "--cache-policy"},
		{func(o *Options) { o.Expire = "*=x" }, "--expire"},
		{func(o *Options) { o.MaxBacklog = 0 }, "--max-backlog"},
		{func(o *Options) { o.PeerListen = "127.0.0.1:1563" }, "need --tls"},
		{func(o *Options) { o.Peers = []config.Peer{{Name: "b", Addr: "127.0.0.1:1", Mode: "mesh", Secret: "s"}} }, "needs --node"},
	} {
		o := DefaultOptions()
		tc.set(&o)
		if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want an error naming %s, got %v", tc.want, err)
		}
	}
}

// Peers come from a --peers file or from Peers (a configuration file's
// tables), in one format, and not from both.
func TestPeers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "peers")
	text := "[[peer]]\nname = \"b\"\naddr = \"127.0.0.1:1120\"\nmode = \"mesh\"\nsecret = \"s\"\n\n[[peer]]\nname = \"up\"\naddr = \"127.0.0.1:119\"\nmode = \"feed\"\n"
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions()
	o.Node, o.PeersFile = "127.0.0.1:4001", path
	peers, err := o.peers()
	if err != nil {
		t.Fatal(err)
	}
	if len(peers) != 2 || peers[0].Mode != peering.Mesh || peers[0].Password != "s" || peers[1].Mode != peering.Feed || peers[1].Password != "" {
		t.Errorf("peers %+v", peers)
	}
	o.Peers = []config.Peer{{Name: "c", Addr: "127.0.0.1:1121", Mode: "mesh", Secret: "s"}}
	if _, err := o.peers(); err == nil || !strings.Contains(err.Error(), "one place") {
		t.Errorf("peers in two places: %v", err)
	}
	o.PeersFile = ""
	o.Peers = append(o.Peers, o.Peers[0])
	if _, err := o.peers(); err == nil || !strings.Contains(err.Error(), "unique") {
		t.Errorf("a peer named twice: %v", err)
	}
}

// TestMemoryLimitIsOnTopOfTheCache: a site on the DHT holds its article
// cache on purpose, so the soft memory limit leaves room for it (a limit
// under a full cache had the collector run without end).
func TestMemoryLimitIsOnTopOfTheCache(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int
	}{
		{[]string{"--node", "127.0.0.1:4001"}, 256 + 256},
		{[]string{"--node", "127.0.0.1:4001", "--cache-mb", "1024", "--memory-limit-mb", "100"}, 1124},
		{nil, 256}, // a local spool has no cache
		{[]string{"--node", "127.0.0.1:4001", "--memory-limit-mb", "0"}, 0},
	} {
		fs := flag.NewFlagSet("nntp", flag.ContinueOnError)
		o := DefaultOptions()
		o.RegisterFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		if got := o.GoMemoryLimitMB(); got != tc.want {
			t.Errorf("%v: memory limit %d MiB, want %d", tc.args, got, tc.want)
		}
	}
}
