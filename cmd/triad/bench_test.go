package main

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// bench dhash measures what a client does by default: operations go to any
// node, which looks the key up; skipping the lookup takes a flag and says
// so. Every operation succeeds and every block read back is checked.
func TestBenchDHashRoutes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts node processes")
	}
	bin := buildTriad(t)
	for _, tc := range []struct {
		flags []string
		route string
	}{
		{nil, "any node, with the lookup"},
		{[]string{"--holder-direct"}, "holder-direct, lookup skipped"},
	} {
		args := append([]string{"bench", "dhash", "--nodes", "3", "--ops", "200", "--size", "1000", "--dir", t.TempDir(), "--json"}, tc.flags...)
		out, err := exec.Command(bin, args...).Output()
		if err != nil {
			t.Fatalf("triad %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if !strings.Contains(lines[0], "sent to "+tc.route) {
			t.Errorf("%v: header %q does not name the route %q", tc.flags, lines[0], tc.route)
		}
		var res struct {
			Route    string
			Put, Get struct{ Done, Failed int }
		}
		if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
			t.Fatalf("%v: last line is not JSON: %v", tc.flags, err)
		}
		if res.Route != tc.route {
			t.Errorf("%v: route %q, want %q", tc.flags, res.Route, tc.route)
		}
		if res.Put.Done != 200 || res.Get.Done != 200 || res.Put.Failed+res.Get.Failed != 0 {
			t.Errorf("%v: put %+v get %+v, want 200 done and none failed each", tc.flags, res.Put, res.Get)
		}
	}
}
