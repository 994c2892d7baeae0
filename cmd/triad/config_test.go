package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"triad/internal/e2e"

	"triad/internal/config"
	"triad/internal/nntp"
)

// The example file checks clean, and `triad up` runs from it: its [up]
// table sets the sites, ports and groups (and its [nntp] table is checked
// for every site), and a flag on the command line overrides the file.
func TestUpRunsFromTheExampleConfig(t *testing.T) {
	bin := e2e.Build(t)
	dir := t.TempDir()
	example, err := exec.Command(bin, "config", "example").Output()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "triad.toml")
	if err := os.WriteFile(path, example, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "config", "check", path).CombinedOutput(); err != nil || !strings.Contains(string(out), ": ok (") {
		t.Fatalf("config check of the example: %v\n%s", err, out)
	}

	// The example, edited as an operator would: two sites on free ports.
	port, newsPort := e2e.ConsecutiveFreePorts(t, 2), e2e.ConsecutiveFreePorts(t, 2)
	text := string(example)
	for key, value := range map[string]string{
		"sites": "2", "port": fmt.Sprint(port), "nntp-port": fmt.Sprint(newsPort),
		"data": fmt.Sprintf("%q", filepath.Join(dir, "data")), "groups": `"local.test,local.config"`,
	} {
		text = setKey(t, text, "up", key, value)
	}
	text = setKey(t, text, "nntp", "expire", `"local.config=2;*=30"`)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	// The command line wins over the file (--vnodes 1; the file says 2).
	up := e2e.StartUp(t, bin, "--config", path, "--vnodes", "1")
	up.WaitFor("Press Ctrl-C") // started, the ring consistent before the sites
	c, err := nntp.Dial(fmt.Sprintf("127.0.0.1:%d", newsPort+1), time.Now().Add(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if reply, err := c.Cmd("GROUP local.config"); err != nil || !strings.HasPrefix(string(reply), "211") {
		t.Fatalf("GROUP local.config at the second site: %q %v", reply, err)
	}
	c.Close()
	up.Interrupt()
	// --vnodes 1 from the command line: each node printed one vnode.
	logs := up.Seen
	if !strings.Contains(logs, "(1 vnodes,") || strings.Contains(logs, "(2 vnodes,") {
		t.Errorf("the command line's --vnodes 1 did not win over the file's 2:\n%s", logs)
	}
}

// setKey sets key in table [section] of a TOML text.
func setKey(t *testing.T, text, section, key, value string) string {
	t.Helper()
	start := strings.Index(text, "\n["+section+"]\n")
	if start < 0 {
		t.Fatalf("no [%s]", section)
	}
	end := len(text)
	if next := strings.Index(text[start+1:], "\n["); next >= 0 {
		end = start + 1 + next
	}
	lines := strings.Split(text[start:end], "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, key+" = ") {
			lines[i] = key + " = " + value
			return text[:start] + strings.Join(lines, "\n") + text[end:]
		}
	}
	t.Fatalf("no %s in [%s]", key, section)
	return ""
}

// config check names the line of each problem, and a command given a bad
// file says the same and starts nothing.
func TestConfigCheckNamesTheLine(t *testing.T) {
	bin := e2e.Build(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.toml")
	bad := `[node]
listen = "127.0.0.1:4001"
vnode = 3
capacity-mb = -5
join = "nohost"
workers = 0

[nntp]
max-article = 10
idle-timeout = "1m"

[up]
sites = 40

[[nntp.peer]]
name = "site2"
addr = "127.0.0.1:1120"
mode = "mesh"
secret = "s"
`
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, "config", "check", path).CombinedOutput()
	if code := exitCode(err); code != 1 {
		t.Fatalf("config check exited %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{
		`bad.toml:3: unknown key "vnode" in [node] (did you mean vnodes?)`,
		"bad.toml:4: capacity-mb: -5 is negative",
		`bad.toml:5: join: address "nohost" is not host:port`,
		// Said although the table has problems above: every one is.
		"bad.toml:6: --workers 0: want at least 1",
		"bad.toml:9: --max-article 10: want 1000 bytes to 64 MiB",
		"bad.toml:10: --idle-timeout 1m0s: RFC 3977 asks for at least 3 minutes",
		"bad.toml:13: --sites 40,",
	} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("config check did not say %q:\n%s", want, out)
		}
	}
	// In the file's order.
	if lines := regexp.MustCompile(`bad\.toml:(\d+):`).FindAllSubmatch(out, -1); !slices.IsSortedFunc(lines, func(a, b [][]byte) int {
		x, _ := strconv.Atoi(string(a[1]))
		y, _ := strconv.Atoi(string(b[1]))
		return x - y
	}) {
		t.Errorf("config check's problems are not in the file's order:\n%s", out)
	}
	if n := bytes.Count(out, []byte("--max-article 10")); n != 1 {
		t.Errorf("the [nntp] problem was said %d times, want once:\n%s", n, out)
	}
	data := filepath.Join(dir, "data")
	out, err = exec.Command(bin, "node", "--config", path, "--data", data).CombinedOutput()
	if code := exitCode(err); code != 1 || !bytes.Contains(out, []byte("bad.toml:4: capacity-mb: -5 is negative")) {
		t.Fatalf("triad node with the bad file exited %d:\n%s", code, out)
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("triad node with a bad file made its data directory: %v", err)
	}
}

// exitCode is a finished command's exit status (0 if err is nil).
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	if e, ok := err.(*exec.ExitError); ok {
		return e.ExitCode()
	}
	return -1
}

// A site's peers come from [[nntp.peer]] tables or a --peers file, not
// both; the tables are checked like the file's lines.
func TestConfigPeers(t *testing.T) {
	dir := t.TempDir()
	peers := filepath.Join(dir, "peers")
	if err := os.WriteFile(peers, []byte("[[peer]]\nname = \"site3\"\naddr = \"127.0.0.1:1121\"\nmode = \"mesh\"\nsecret = \"s\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Peers share articles through the DHT: the site needs a node.
	node := "[nntp]\nnode = \"127.0.0.1:4001\"\n"
	table := "[[nntp.peer]]\nname = \"site2\"\naddr = \"127.0.0.1:1120\"\nmode = \"mesh\"\nsecret = \"s\"\n"
	for _, tc := range []struct {
		name, text, want string
	}{
		{"tables", node + table, ""},
		{"a peers file", fmt.Sprintf("[nntp]\nnode = \"127.0.0.1:4001\"\npeers = %q\n", peers), ""},
		{"both", fmt.Sprintf("[nntp]\nnode = \"127.0.0.1:4001\"\npeers = %q\n\n", peers) + table, "give the peers in one place"},
		{"same name twice", node + table + "\n" + table, `:9: peer name "site2" is not a unique Path name`},
		{"without a node", table, "--peers needs --node"},
		{"feed without secret", node + "[[nntp.peer]]\nname = \"up\"\naddr = \"127.0.0.1:119\"\nmode = \"feed\"\n", ""},
		{"a TLS link without a certificate", node + strings.Replace(table, `"s"`, `"tls"`, 1), "need --tls"},
		{"a TLS listener without a certificate", "[nntp]\npeer-listen = \"127.0.0.1:1563\"\n", "need --tls"},
		{"TLS links", "[nntp]\nnode = \"127.0.0.1:4001\"\ntls = \"some/bundle\"\npeer-listen = \"127.0.0.1:1563\"\n\n" + strings.Replace(table, `"s"`, `"tls"`, 1), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "f.toml")
			if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := config.Load(path)
			if err == nil {
				err = checkFile(f)
			}
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}
