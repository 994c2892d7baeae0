package bench

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"os"
	"strings"
	"testing"
)

// parseCommand registers c's flags, parses args and validates them, as
// cmd/triad does.
func parseCommand(c Command, args ...string) error {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c.RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	return c.Validate()
}

// bench dhash compares one thing at a time, and names the flag of a bad
// value.
func TestDHashCommandValidate(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in the error; empty: valid
	}{
		{nil, ""},
		{[]string{"--tls", "--rounds", "5"}, ""},
		{[]string{"--nodes", "1,2"}, ""},
		{[]string{"--rounds", "0"}, "--rounds 0: want 1 to 50"},
		{[]string{"--tls", "--compare-stp"}, "--tls and --compare-stp: compare one thing at a time"},
		{[]string{"--nodes", "2,4", "--compare-stp"}, "--nodes 2,4 with --tls or --compare-stp"},
		{[]string{"--size", "0"}, "want 1-64 nodes"},
	} {
		c := DefaultDHashCommand()
		err := parseCommand(&c, tc.args...)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
	}
}

// bench nntp needs --addr, checks the run's articles (defaulted by size)
// and spread addresses, and speaks of its flags without the package's
// prefix.
func TestNNTPCommandValidate(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "--addr is required"},
		{[]string{"--addr", "127.0.0.1:119"}, ""},
		{[]string{"--addr", "127.0.0.1:119", "--size", "500000"}, ""}, // 1,000 articles: 10,000 would not fit
		{[]string{"--addr", "127.0.0.1:119", "--conns", "0"}, "conns must be 1 to 256"},
		{[]string{"--addr", "127.0.0.1:119", "--spread-addrs", "127.0.0.1:120, ,127.0.0.1:121"}, ""},
		{[]string{"--addr", "127.0.0.1:119", "--spread-addrs", "127.0.0.1:x"}, "bad port"},
	} {
		c := DefaultNNTPCommand()
		err := parseCommand(&c, tc.args...)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%q: %v, want %q", tc.args, err, tc.want)
		}
		if err != nil && strings.HasPrefix(err.Error(), "bench: ") {
			t.Errorf("%q: %v keeps the package's prefix", tc.args, err)
		}
	}
	c := DefaultNNTPCommand()
	if err := parseCommand(&c, "--addr", "127.0.0.1:119", "--size", "20000", "--spread-addrs", " 127.0.0.1:120,,127.0.0.1:121 "); err != nil {
		t.Fatal(err)
	}
	c.resolve()
	if c.Articles != 1000 || strings.Join(c.SpreadAddrs, " ") != "127.0.0.1:120 127.0.0.1:121" {
		t.Errorf("resolved %d articles, spread %q", c.Articles, c.SpreadAddrs)
	}
}

// bench fs reads tasks, and must have some to read without the copy.
func TestFSCommandValidate(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{nil, true},
		{[]string{"--tasks", "0"}, true},
		{[]string{"--no-copy", "--tasks", "0"}, false},
		{[]string{"--tasks", "-1"}, false},
		{[]string{"--metrics", "http://a/metrics, http://b/metrics"}, true},
	} {
		c := DefaultFSCommand()
		if err := parseCommand(&c, tc.args...); (err == nil) != tc.ok {
			t.Errorf("%q: %v", tc.args, err)
		}
	}
	c := DefaultFSCommand()
	if err := parseCommand(&c, "--metrics", "http://a/metrics, http://b/metrics,"); err != nil || len(c.Metrics) != 2 || c.Metrics[1] != "http://b/metrics" {
		t.Errorf("--metrics: %q, %v", c.Metrics, err)
	}
}

// A run makes its scratch folder under Dir and removes it, writes its
// table, then the JSON line when asked, and logs on Log.
func TestSyncCommandRun(t *testing.T) {
	dir := t.TempDir()
	c := DefaultSyncConfig()
	if err := parseCommand(&c, "--keys", "2000", "--outside", "100", "--dir", dir); err != nil {
		t.Fatal(err)
	}
	var text bytes.Buffer
	var last any
	o := Output{Text: &text, Log: io.Discard, JSON: func(v any) error { last = v; return nil }}
	if err := c.Run(o); err != nil {
		t.Fatal(err)
	}
	if text.Len() == 0 {
		t.Error("no table")
	}
	if b, err := json.Marshal(last); err != nil || !bytes.Contains(b, []byte(`"keys":2000`)) {
		t.Errorf("JSON line %s, %v", b, err)
	}
	if left, err := os.ReadDir(dir); err != nil || len(left) != 0 {
		t.Errorf("left in --dir: %v, %v", left, err)
	}
}
