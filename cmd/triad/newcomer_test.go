package main

import (
	"bytes"
	"fmt"
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
