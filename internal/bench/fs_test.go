package bench

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The tree's walk, its copy and the check of the copy: a copy reads back
// whole, a changed byte is named, and tasks are whole directories spread
// over the tree.
func TestFSTreeCopyAndTasks(t *testing.T) {
	src := t.TempDir()
	for d := range 6 {
		for f := range 3 {
			p := filepath.Join(src, fmt.Sprintf("d%d", d), fmt.Sprintf("f%d", f))
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, []byte(strings.Repeat(p, d+1)), 0o644)
		}
	}
	os.Symlink("d0/f0", filepath.Join(src, "link"))
	sums, res, err := hashTree(src)
	if err != nil || res.Files != 18 || len(sums) != 18 {
		t.Fatalf("hashTree: %d files (%d sums), %v; want 18", res.Files, len(sums), err)
	}
	dst := filepath.Join(t.TempDir(), "copy")
	if err := copyTree(src, dst); err != nil {
		t.Fatal(err)
	}
	if err := checkTree(dst, sums); err != nil {
		t.Fatal(err)
	}
	if target, err := os.Readlink(filepath.Join(dst, "link")); err != nil || target != "d0/f0" {
		t.Fatalf("the symlink copied as %q, %v", target, err)
	}
	os.WriteFile(filepath.Join(dst, "d3", "f1"), []byte("other"), 0o644)
	if err := checkTree(dst, sums); err == nil || !strings.Contains(err.Error(), filepath.Join("d3", "f1")) {
		t.Fatalf("a changed file: %v", err)
	}
	tasks := pickTasks(sums, 3)
	if len(tasks) != 3 || tasks[0].dir != "d0" || tasks[1].dir != "d2" || tasks[2].dir != "d4" {
		t.Fatalf("tasks %+v, want d0, d2 and d4", tasks)
	}
	for _, task := range tasks {
		if len(task.files) != 3 {
			t.Errorf("task %s has %d files, want its 3", task.dir, len(task.files))
		}
	}
	if got := pickTasks(sums, 100); len(got) != 6 {
		t.Fatalf("more tasks asked than directories: %d, want all 6", len(got))
	}
}

// The lookup counter is summed over the gateways' pages; a page without
// it is an error that names it.
func TestSumCounter(t *testing.T) {
	page := func(body string) string {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, body) }))
		t.Cleanup(s.Close)
		return s.URL
	}
	a := page("# HELP x\n" + lookupMsgs + " 12\nother 5\n")
	b := page(lookupMsgs + " 30\n")
	if got, err := sumCounter([]string{a, b}, lookupMsgs); err != nil || got != 42 {
		t.Fatalf("sumCounter = %v, %v; want 42", got, err)
	}
	none := page("other 1\n")
	if _, err := sumCounter([]string{a, none}, lookupMsgs); err == nil || !strings.Contains(err.Error(), "a node without --d2") {
		t.Fatalf("a page without the counter: %v", err)
	}
	if got, err := sumCounter(nil, lookupMsgs); err != nil || got != 0 {
		t.Fatalf("no pages: %v, %v", got, err)
	}
}
