package main

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"triad/internal/e2e"
)

// chromium finds headless Chromium: skipped without it, unless
// TRIAD_REQUIRE_CHROMIUM is set (CI installs Debian's chromium and sets
// it, so that a missing browser fails there).
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("TRIAD_REQUIRE_CHROMIUM") != "" {
		t.Fatal("no chromium on PATH (TRIAD_REQUIRE_CHROMIUM is set)")
	}
	t.Skip("no chromium on PATH: apt-get install -y chromium")
	return ""
}

// runChromium runs headless Chromium with args on url, a fresh profile,
// and nothing that reaches outside this machine.
func runChromium(t *testing.T, bin, url string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--user-data-dir=" + t.TempDir(), "--window-size=1280,1800"}, args...)
	cmd := exec.CommandContext(ctx, bin, append(all, url)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return out
}

// The status page of a running `triad up`, loaded in headless Chromium:
// the browser renders every section (the DOM it built holds them, with the
// ring and coordinate drawings and the news figures of the site), and its
// screenshot is a picture, not a blank page. The screenshot is kept in
// $TRIAD_ARTIFACTS (CI sets it) for a person to look at.
func TestStatusPageInChromium(t *testing.T) {
	browser := chromium(t)
	bin := e2e.Build(t)
	port, newsPort, httpPort := e2e.ConsecutiveFreePorts(t, 3), e2e.ConsecutiveFreePorts(t, 3), e2e.ConsecutiveFreePorts(t, 3)
	up := e2e.StartUp(t, bin, "--sites", "3", "--port", fmt.Sprint(port), "--nntp-port", fmt.Sprint(newsPort),
		"--http-port", fmt.Sprint(httpPort), "--data", filepath.Join(t.TempDir(), "data"))
	up.WaitFor("Press Ctrl-C") // started, the ring consistent before the sites
	url := fmt.Sprintf("http://127.0.0.1:%d/", httpPort)

	dom := string(runChromium(t, browser, url, "--dump-dom"))
	for _, want := range []string{`<section id="ring">`, `<section id="coordinates">`, `<section id="storage">`,
		`<section id="maintenance">`, `<section id="news">`, `<section id="errors">`,
		"news site site1", `class="self"`, `class="succ"`, `class="peer"`, "articles taken", "site2"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered page lacks %q", want)
		}
	}
	if strings.Contains(dom, "did not answer") {
		t.Errorf("the node did not answer the page")
	}

	shot := filepath.Join(t.TempDir(), "status.png")
	runChromium(t, browser, url, "--screenshot="+shot, "--hide-scrollbars")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("the screenshot is not a PNG: %v", err)
	}
	if b := img.Bounds(); b.Dx() < 1000 || b.Dy() < 1000 {
		t.Fatalf("screenshot of %v", b)
	}
	// A rendered page has many colours (the header, the dots, text); a
	// blank or error page has one or two.
	colours := map[uint32]bool{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y += 4 {
		for x := b.Min.X; x < b.Max.X; x += 4 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[r>>12<<8|g>>12<<4|bl>>12] = true
		}
	}
	if len(colours) < 8 {
		t.Errorf("the screenshot has %d colours: a blank page?", len(colours))
	}
	if dir := os.Getenv("TRIAD_ARTIFACTS"); dir != "" {
		data, err := os.ReadFile(shot)
		if err == nil {
			err = os.MkdirAll(dir, 0o755)
		}
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, "status-page.png"), data, 0o644)
		}
		if err != nil {
			t.Errorf("keeping the screenshot: %v", err)
		}
	}
	up.Interrupt()
}

// The deployment page (issue 47) of three `triad node` processes, loaded
// from one of them in headless Chromium: a row per node, each up; after a
// SIGKILL of one, its row is red and the problems name it within 10 s.
// The screenshot is kept in $TRIAD_ARTIFACTS.
func TestDeploymentPageInChromium(t *testing.T) {
	browser := chromium(t)
	c := e2e.NewCluster(t)
	ports, httpPorts := e2e.FreePorts(t, 3), e2e.FreePorts(t, 3)
	addr := func(i int) string { return fmt.Sprintf("127.0.0.1:%d", ports[i]) }
	var nodes []*e2e.Node
	for i := range 3 {
		join := ""
		if i > 0 {
			join = addr(0)
		}
		nodes = append(nodes, c.StartWith(fmt.Sprintf("node%d", i), addr(i), filepath.Join(c.Dir, fmt.Sprintf("data%d", i)), join, e2e.Vnodes,
			"--http", fmt.Sprintf("127.0.0.1:%d", httpPorts[i])))
	}
	c.WaitConsistent("after start", 30*time.Second)
	url := fmt.Sprintf("http://127.0.0.1:%d/deployment", httpPorts[0])
	dom := string(runChromium(t, browser, url, "--dump-dom"))
	if n := strings.Count(dom, `<tr class="up"`); n != 3 || strings.Contains(dom, `<tr class="down"`) || !strings.Contains(dom, `<section id="problems">`) {
		t.Fatalf("the deployment page shows %d nodes up, want 3 and none down:\n%s", n, dom)
	}

	victim := addr(2)
	nodes[2].Crash(t)
	killed := time.Now()
	for !strings.Contains(dom, `<tr class="down" data-addr="`+victim+`"`) || !strings.Contains(dom, "node "+victim+" is down") {
		if time.Since(killed) > 10*time.Second {
			t.Fatalf("10 s after the kill of %s, the page does not show it down:\n%s", victim, dom)
		}
		dom = string(runChromium(t, browser, url, "--dump-dom"))
	}
	t.Logf("the page shows %s down %v after the kill", victim, time.Since(killed).Round(time.Millisecond))

	shot := filepath.Join(t.TempDir(), "deployment.png")
	runChromium(t, browser, url, "--screenshot="+shot, "--hide-scrollbars")
	data, err := os.ReadFile(shot)
	if err != nil {
		t.Fatal(err)
	}
	if img, err := png.Decode(bytes.NewReader(data)); err != nil || img.Bounds().Dx() < 1000 {
		t.Fatalf("the screenshot: %v", err)
	}
	if dir := os.Getenv("TRIAD_ARTIFACTS"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "deployment-page.png"), data, 0o644); err != nil {
			t.Errorf("keeping the screenshot: %v", err)
		}
	}
}
