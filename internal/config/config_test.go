package config

import (
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// nodeFlags is a flag set shaped like triad node's.
func nodeFlags() (*flag.FlagSet, map[string]any) {
	fs := flag.NewFlagSet("node", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs, map[string]any{
		"listen":      fs.String("listen", "127.0.0.1:4001", "TCP `address` to listen on"),
		"join":        fs.String("join", "", "`address` of any running node"),
		"data":        fs.String("data", "", "data `directory`"),
		"vnodes":      fs.Int("vnodes", 1, "virtual servers"),
		"capacity-mb": fs.Int64("capacity-mb", 0, "disk space in MiB"),
		"stabilize":   fs.Duration("stabilize", time.Second, "mean time between rounds"),
		"groups":      fs.String("groups", "", "comma-separated `newsgroups`"),
		"v":           fs.Bool("v", false, "verbose"),
		"config":      fs.String("config", "", "configuration `file`"),
	}
}

const good = `# a node
[node]
listen = "127.0.0.1:4101"
join = "127.0.0.1:4001"
vnodes = 4
capacity-mb = 10_240
stabilize = "500ms"
groups = ["local.test", "local.general"]
v = true

[nntp]
listen = "127.0.0.1:1119"

[[nntp.peer]]
name = "site2"
addr = "10.0.0.2:119"
mode = "mesh"
secret = "s3cret"

[[nntp.peer]]
name = "upstream"
addr = "news.example.net:119"
mode = "feed"
groups = "comp.*"
`

func TestApplySetsWhatTheCommandLineDoesNot(t *testing.T) {
	f, err := Parse("triad.toml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	fs, v := nodeFlags()
	if err := fs.Parse([]string{"--vnodes", "2"}); err != nil {
		t.Fatal(err)
	}
	if err := f.Apply("node", fs, "config"); err != nil {
		t.Fatal(err)
	}
	if got := *v["listen"].(*string); got != "127.0.0.1:4101" {
		t.Errorf("listen %q", got)
	}
	if got := *v["vnodes"].(*int); got != 2 {
		t.Errorf("vnodes %d: the command line's 2 must win over the file's 4", got)
	}
	if got := *v["capacity-mb"].(*int64); got != 10240 {
		t.Errorf("capacity-mb %d", got)
	}
	if got := *v["stabilize"].(*time.Duration); got != 500*time.Millisecond {
		t.Errorf("stabilize %v", got)
	}
	if got := *v["groups"].(*string); got != "local.test,local.general" {
		t.Errorf("groups %q", got)
	}
	if !*v["v"].(*bool) {
		t.Error("v not set")
	}
	if len(f.Peers) != 2 || f.Peers[0] != (Peer{Name: "site2", Addr: "10.0.0.2:119", Mode: "mesh", Secret: "s3cret", File: "triad.toml", Line: 14}) ||
		f.Peers[1].Groups != "comp.*" || f.Peers[1].Line != 20 {
		t.Errorf("peers %+v", f.Peers)
	}
	// A command's own check of a value from the file names its line; one
	// about a value from the command line does not.
	if err := f.Explain("node", errors.New("--stabilize 500ms: too short")); !strings.HasPrefix(err.Error(), "triad.toml:7: ") {
		t.Errorf("explained: %v", err)
	}
	if err := f.Explain("node", errors.New("--vnodes 2: too few")); strings.Contains(err.Error(), "triad.toml") {
		t.Errorf("explained a command-line value: %v", err)
	}
}

// Every bad file is refused with the line of what is wrong.
func TestBadFilesNameTheLine(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
	}{
		{"unknown key", "[node]\nlisten = \"127.0.0.1:1\"\nlistne = \"x\"\n", `:3: unknown key "listne"`},
		{"mistyped key", "[node]\ncapacity_mb = 5\n", "did you mean capacity-mb?"},
		{"bad address", "[node]\n\njoin = \"localhost\"\n", `:3: join: address "localhost" is not host:port`},
		{"bad port", "[node]\nlisten = \"127.0.0.1:99999\"\n", ":2: listen: address"},
		{"negative size", "[node]\nvnodes = 1\ncapacity-mb = -5\n", ":3: capacity-mb: -5 is negative"},
		{"negative duration", "[node]\nstabilize = \"-1s\"\n", ":2: stabilize: -1s is negative"},
		{"wrong type", "[node]\nvnodes = \"four\"\n", `:2: vnodes = "four": `},
		{"unknown table", "[nodes]\nlisten = \"127.0.0.1:1\"\n", `:1: unknown table "nodes"`},
		{"outside a table", "listen = \"127.0.0.1:1\"\n", ":1: \"listen\" is outside any table"},
		{"twice", "[node]\nvnodes = 1\n\nvnodes = 2\n", ":4: vnodes is set twice (first at line 2)"},
		{"table twice", "[node]\n[nntp]\n[node]\n", ":3: table [node] twice"},
		{"not toml", "[node]\nvnodes = 1\nlisten = \n", ":3: not TOML"},
		{"the file's own flag", "[node]\nconfig = \"other.toml\"\n", `:2: unknown key "config"`},
		{"peer without secret", "[nntp]\n[[nntp.peer]]\nname = \"b\"\naddr = \"127.0.0.1:1\"\nmode = \"mesh\"\n", ":2: peer: b: an announce or mesh peer needs a secret"},
		{"peer bad address", "[[nntp.peer]]\nname = \"b\"\naddr = \"b\"\nmode = \"feed\"\n", ":1: peer: address \"b\" is not host:port"},
		{"peer unknown key", "[[nntp.peer]]\nname = \"b\"\nport = 5\n", `:3: peer: unknown key "port"`},
		{"inline table", "[node]\nlisten = { host = \"x\" }\n", ":2: listen: a InlineTable is not a setting"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse("bad.toml", []byte(tc.text))
			if err == nil {
				fs, _ := nodeFlags()
				err = f.Apply("node", fs, "config")
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "bad.toml:") {
				t.Fatalf("got %v, want bad.toml:...%s", err, tc.want)
			}
		})
	}
}

// A file that is too large is refused before it is read.
func TestLoadBoundsTheFile(t *testing.T) {
	path := t.TempDir() + "/big.toml"
	if err := writeFile(path, strings.Repeat("# padding\n", MaxFileBytes/10+1)); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Fatalf("Load of a file past the bound: %v", err)
	}
	if _, err := Load(t.TempDir() + "/missing.toml"); err == nil {
		t.Fatal("Load of a missing file succeeded")
	}
}

// FuzzParse: no input makes Parse panic, and what it accepts it accepts
// again the same.
func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Add([]byte("[node]\nvnodes = 0x10\n"))
	f.Add([]byte("[[nntp.peer]]\nname = 'a'\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cf, err := Parse("fuzz.toml", data)
		if err != nil {
			return
		}
		for _, s := range Sections {
			for _, st := range cf.Settings(s) {
				if st.Line < 1 || st.Key == "" {
					t.Fatalf("setting %+v", st)
				}
			}
		}
	})
}

func writeFile(path, text string) error { return os.WriteFile(path, []byte(text), 0o644) }

// A peers file holds [[peer]] tables with the keys of [[nntp.peer]], and
// nothing else; each peer names its file and line.
func TestLoadPeers(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	path := write("peers", "# the other sites\n[[peer]]\nname = \"site2\"\naddr = \"10.0.0.2:119\"\nmode = \"mesh\"\nsecret = \"s3cret\"\n\n[[peer]]\nname = \"up\"\naddr = \"news.example:119\"\nmode = \"feed\"\n")
	peers, err := LoadPeers(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(peers) != 2 || peers[0] != (Peer{Name: "site2", Addr: "10.0.0.2:119", Mode: "mesh", Secret: "s3cret", File: path, Line: 2}) || peers[1].Line != 8 {
		t.Errorf("peers %+v", peers)
	}
	for text, want := range map[string]string{
		"[nntp]\nlisten = \"x\"\n": ":1: unknown table \"nntp\"",
		"name = \"a\"\n":           ":1: \"name\" is outside any table",
		"[[peer]]\nname = \"a\"\naddr = \"b:1\"\nmode = \"mesh\"\n": ":1: peer: a: an announce or mesh peer needs a secret",
		"site2 10.0.0.2:119 mesh s3cret\n":                          ":1: not TOML",
	} {
		_, err := LoadPeers(write("bad", text))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", text, err, want)
		}
	}
}
