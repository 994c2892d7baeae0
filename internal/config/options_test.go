package config

import (
	"flag"
	"fmt"
	"strings"
	"testing"
)

// testOptions stand for a command's Options: a listen address, a count
// and, for a site, peers.
type testOptions struct {
	Listen string
	Count  int
	Peers  []Peer
}

// newTestOptions are the defaults.
func newTestOptions() *testOptions { return &testOptions{Listen: "127.0.0.1:1", Count: 3} }

// RegisterFlags binds the flags to o, with o's values as defaults (as the
// commands' Options do: registering twice changes nothing).
func (o *testOptions) RegisterFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Listen, "listen", o.Listen, "TCP `address` to listen on")
	fs.IntVar(&o.Count, "count", o.Count, "how many there are, a help long enough that it must be wrapped onto a second line of the example file")
}

func (o *testOptions) Validate() error {
	if o.Count > 10 {
		return fmt.Errorf("--count %d: at most 10", o.Count)
	}
	return nil
}

// testSite is testOptions that take the [[nntp.peer]] tables.
type testSite struct{ *testOptions }

func (s testSite) SetPeers(p []Peer) { s.Peers = p }

func testTables(sites *[]*testOptions) Tables {
	plain := func() Options { return newTestOptions() }
	return Tables{"node": plain, "up": plain, "nntp": func() Options {
		o := newTestOptions()
		if sites != nil {
			*sites = append(*sites, o)
		}
		return testSite{o}
	}}
}

func TestWriteExample(t *testing.T) {
	var b strings.Builder
	if err := WriteExample(&b, testTables(nil)); err != nil {
		t.Fatal(err)
	}
	// Keys in flag order (by name), each help wrapped to 76 columns.
	table := `# how many there are, a help long enough that it must be wrapped onto a second
# line of the example file
count = 3
# TCP address to listen on
listen = "127.0.0.1:1"
`
	want := exampleHeader + "\n[node]\n" + table + "\n[nntp]\n" + table + peersExample + "\n[up]\n" + table
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// The example is a file Check takes.
	f, err := Parse("example.toml", []byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Check(testTables(nil)); err != nil {
		t.Errorf("the example does not check: %v", err)
	}
}

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		text  string
		width int
		want  []string
	}{
		{"", 10, nil},
		{"one two three", 7, []string{"one two", "three"}},
		{"  spaced   out  ", 20, []string{"spaced out"}},
		{"a longerthanwidth b", 5, []string{"a", "longerthanwidth", "b"}},
	} {
		if got := wrap(tc.text, tc.width); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("wrap(%q, %d) = %q, want %q", tc.text, tc.width, got, tc.want)
		}
	}
}

func TestCheckAndSummary(t *testing.T) {
	for _, tc := range []struct {
		name, text, want, summary string
	}{
		{"empty", "", "", "empty"},
		{"keys and peers", "[node]\ncount = 2\nlisten = \"127.0.0.1:4\"\n[nntp]\nlisten = \"127.0.0.1:2\"\n[[nntp.peer]]\nname = \"b\"\naddr = \"127.0.0.1:3\"\nmode = \"feed\"\n", "",
			"[node] 2 keys, [nntp] 1 keys, 1 peers"},
		{"a command's own check names the line", "[node]\n\ncount = 11\n", "f.toml:3: --count 11: at most 10", "[node] 1 keys"},
		{"the same problem twice is said once", "[node]\ncount = 11\n[up]\ncount = 11\n", "f.toml:2: --count 11: at most 10\nf.toml:4: --count 11: at most 10", "[node] 1 keys, [up] 1 keys"},
		{"an unknown key", "[up]\ncont = 1\n", `f.toml:2: unknown key "cont" in [up] (did you mean count?)`, "[up] 1 keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("f.toml", []byte(tc.text))
			if err != nil {
				t.Fatal(err)
			}
			var sites []*testOptions
			err = f.Check(testTables(&sites))
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || err.Error() != tc.want) {
				t.Errorf("Check: %v, want %q", err, tc.want)
			}
			if len(sites) != 1 || len(sites[0].Peers) != len(f.Peers) {
				t.Errorf("the site's options took %d peers of %d", len(sites[0].Peers), len(f.Peers))
			}
			if got := f.Summary(); got != tc.summary {
				t.Errorf("Summary %q, want %q", got, tc.summary)
			}
		})
	}
}

// TestApplyOptions: the command line wins over the file, only the
// Options' own flags are keys, and a nil file sets nothing.
func TestApplyOptions(t *testing.T) {
	f, err := Parse("f.toml", []byte("[nntp]\nlisten = \"127.0.0.1:5\"\ncount = 4\n[[nntp.peer]]\nname = \"b\"\naddr = \"127.0.0.1:3\"\nmode = \"feed\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	o := newTestOptions()
	fs := flag.NewFlagSet("nntp", flag.ContinueOnError)
	o.RegisterFlags(fs)
	fs.String("config", "", "the file")
	if err := fs.Parse([]string{"--count", "7"}); err != nil {
		t.Fatal(err)
	}
	if err := f.ApplyOptions("nntp", fs, testSite{o}); err != nil {
		t.Fatal(err)
	}
	if o.Listen != "127.0.0.1:5" || o.Count != 7 || len(o.Peers) != 1 {
		t.Errorf("got %+v", o)
	}
	if err := f.ApplyOptions("node", fs, o); err != nil || len(o.Peers) != 1 {
		t.Errorf("[node]: %v, %+v", err, o)
	}
	bad, err := Parse("bad.toml", []byte("[nntp]\nconfig = \"other.toml\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if err := bad.ApplyOptions("nntp", fs, o); err == nil || !strings.Contains(err.Error(), `bad.toml:2: unknown key "config"`) {
		t.Errorf("the file's own flag: %v", err)
	}
	var none *File
	if err := none.ApplyOptions("nntp", fs, o); err != nil {
		t.Errorf("nil file: %v", err)
	}
}
