package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"triad/internal/e2e"

	"triad/internal/noded"
)

// get and stat take a block's whole key: a short form (stat prints the
// first 8 digits) used to be zero-padded into another key, which answered
// "not found".
func TestKeysMustBeWhole(t *testing.T) {
	for _, cmd := range []string{"get", "stat"} {
		for _, key := range []string{"0123abcd", strings.Repeat("a", 39), strings.Repeat("a", 41)} {
			var out, errb bytes.Buffer
			if rc := run([]string{cmd, key, "--addr", "127.0.0.1:1"}, &out, &errb); rc != 2 {
				t.Errorf("%s %s: exit %d, want 2 (usage); stderr %q", cmd, key, rc, errb.String())
			}
			if !strings.Contains(errb.String(), "want all 40 hex digits") {
				t.Errorf("%s %s: stderr %q does not say a whole key is needed", cmd, key, errb.String())
			}
		}
	}
}

// A --plot that cannot be written is refused before the run, not after it.
func TestPlotPathCheckedBeforeTheRun(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ path, want string }{
		{filepath.Join(dir, "no-such-folder", "f.png"), "no folder"},
		{filepath.Join(dir, "f.bmpx"), "not a format"},
		{filepath.Join(dir, "f"), "no extension"},
	} {
		for _, sim := range []string{"ring", "dhash", "passingtone", "congestion", "tapestry", "d2"} {
			var out, errb bytes.Buffer
			rc := run([]string{"sim", sim, "-q", "--plot", tc.path}, &out, &errb)
			if rc != 2 || !strings.Contains(errb.String(), "--plot") || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("sim %s --plot %s: exit %d, stderr %.200q; want 2 and %q", sim, tc.path, rc, errb.String(), tc.want)
			}
			if out.Len() != 0 {
				t.Errorf("sim %s --plot %s ran before refusing: %.200q", sim, tc.path, out.String())
			}
		}
	}
	var out, errb bytes.Buffer
	if rc := run([]string{"get", strings.Repeat("a", 40), "-o", filepath.Join(dir, "nope", "f")}, &out, &errb); rc != 2 || !strings.Contains(errb.String(), "no folder") {
		t.Errorf("get -o into a missing folder: exit %d, stderr %.200q", rc, errb.String())
	}
}

func TestVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if rc := run([]string{"version"}, &out, &errb); rc != 0 {
		t.Fatalf("version: exit %d: %s", rc, errb.String())
	}
	if !strings.HasPrefix(out.String(), "triad ") || !strings.Contains(out.String(), "\ngo      go1.") {
		t.Errorf("version printed %q", out.String())
	}
	info := &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261125-abc"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123abc"}, {Key: "vcs.time", Value: "2026-11-25T23:59:10Z"}, {Key: "vcs.modified", Value: "true"}}}
	want := "triad v0.0.0-20261125-abc\ncommit  0123abc (2026-11-25T23:59:10Z), modified\ngo      go1.26.8\n"
	if got := versionText(info); got != want {
		t.Errorf("versionText = %q, want %q", got, want)
	}
}

// A node told to join through an address where nothing listens says so
// on stderr while it retries, and exits non-zero after --join-timeout,
// rather than standing alone in silence.
func TestJoinDeadAddressExits(t *testing.T) {
	old := noded.JoinReportEvery
	noded.JoinReportEvery = 300 * time.Millisecond
	defer func() { noded.JoinReportEvery = old }()
	ports := e2e.FreePorts(t, 2)
	dead := fmt.Sprintf("127.0.0.1:%d", ports[1])
	var out, errb bytes.Buffer
	rc := run([]string{"node", "--listen", fmt.Sprintf("127.0.0.1:%d", ports[0]), "--data", t.TempDir(), "--join", dead,
		"--join-timeout", "2s", "--maint-interval", "0"}, &out, &errb)
	if rc != 1 {
		t.Fatalf("node --join %s: exit %d, want 1; stderr %s", dead, rc, errb.String())
	}
	for _, want := range []string{"not in a ring yet", "connection refused", "no node of the ring reached through --join " + dead} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
}

// A bad flag, or a bad value, prints the problem and where the usage is:
// a few lines, not the command's whole help (about 100 lines for node).
// --help still prints it all.
func TestFlagErrorsAreShort(t *testing.T) {
	for _, args := range [][]string{{"node", "--bogus"}, {"node", "--vnodes", "x"}, {"up", "--memory-limit-mb", "-5"}} {
		var out, errb bytes.Buffer
		if rc := run(args, &out, &errb); rc != 2 {
			t.Errorf("%v: exit %d, want 2", args, rc)
		}
		lines := strings.Split(strings.TrimSpace(errb.String()), "\n")
		if len(lines) > 3 || !strings.Contains(errb.String(), "triad "+args[0]+" --help") {
			t.Errorf("%v: %d lines of stderr, want at most 3 ending in a hint to --help:\n%s", args, len(lines), errb.String())
		}
	}
	var out, errb bytes.Buffer
	if rc := run([]string{"node", "--help"}, &out, &errb); rc != 0 || !strings.Contains(errb.String(), "Flags:") || strings.Count(errb.String(), "\n") < 30 {
		t.Errorf("node --help: exit %d, %d lines, want the whole usage", rc, strings.Count(errb.String(), "\n"))
	}
}

// --expire takes days, and a bad value says which flag and which units.
func TestExpireTakesDays(t *testing.T) {
	for s, want := range map[string]time.Duration{"30d": 30 * 24 * time.Hour, "1d12h": 36 * time.Hour, "90m": 90 * time.Minute, "-2d": -48 * time.Hour} {
		if got, err := parseDays(s); err != nil || got != want {
			t.Errorf("parseDays(%q) = %v, %v; want %v", s, got, err, want)
		}
	}
	for _, bad := range []string{"30x", "d", "1d-3h", "99999999d", ""} {
		if got, err := parseDays(bad); err == nil {
			t.Errorf("parseDays(%q) = %v, want an error", bad, got)
		}
	}
	for expire, want := range map[string]string{"-5m": "--expire -5m0s: want a positive duration", "30x": "units: ms, s, m, h, d"} {
		var out, errb bytes.Buffer
		if rc := run([]string{"put", "/dev/null", "--expire", expire, "--addr", "127.0.0.1:1"}, &out, &errb); rc != 2 || !strings.Contains(errb.String(), want) || strings.Contains(errb.String(), "--chunk") {
			t.Errorf("put --expire %s: exit %d, stderr %q; want 2 and %q", expire, rc, errb.String(), want)
		}
	}
}

// publish of a file past Tapestry's 1 MiB says the limit and what stores
// larger files, before it dials (it used to end in a hint about TLS).
func TestPublishTooLarge(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, make([]byte, 1<<20+1), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if rc := run([]string{"publish", big, "--addr", "127.0.0.1:1"}, &out, &errb); rc != 1 || !strings.Contains(errb.String(), "at most 1048576 (1 MiB); 'triad put' stores larger files") {
		t.Errorf("publish of 1 MiB + 1: exit %d, %q", rc, errb.String())
	}
}
