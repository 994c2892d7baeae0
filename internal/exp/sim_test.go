package exp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"triad/internal/d2/workload"
)

// output is an Output that records what a run hands it, in order: "text"
// for a table written, "plot TYPE" and "json".
type output struct {
	text   bytes.Buffer
	events []string
	last   any // the JSON value
}

func (r *output) Output() Output {
	return Output{
		Text: writerFunc(func(p []byte) (int, error) {
			if len(r.events) == 0 || r.events[len(r.events)-1] != "text" {
				r.events = append(r.events, "text")
			}
			return r.text.Write(p)
		}),
		Plot: func(res any) error { r.events = append(r.events, fmt.Sprintf("plot %T", res)); return nil },
		JSON: func(v any) error { r.events = append(r.events, "json"); r.last = v; return nil },
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// A Sim's run hands its figure, table and JSON line to the Output in its
// command's order, and its verdict is the check's.
func TestSimRunsInOrder(t *testing.T) {
	var r output
	ring := DefaultRingConfig()
	ring.Nodes, ring.Lookups, ring.Check = 32, 20, true
	if err := ring.Run(r.Output()); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(r.events, ", "); got != "plot exp.RingResult, text, json" {
		t.Errorf("ring: %s, want its figure, its table, its JSON line", got)
	}
	if !strings.Contains(r.text.String(), "violations: 0\n") {
		t.Errorf("ring --check printed no verdict:\n%s", r.text.String())
	}
	if b, err := json.Marshal(r.last); err != nil || !bytes.Contains(b, []byte(`"correct":20`)) {
		t.Errorf("ring's JSON line: %s, %v", b, err)
	}

	// Without Plot or JSON, only the table.
	var text bytes.Buffer
	if err := ring.Run(Output{Text: &text}); err != nil || !strings.Contains(text.String(), "violations: 0") {
		t.Errorf("ring without --plot or --json: %v\n%s", err, text.String())
	}
}

// Flags a run can only refuse once it has started are a UsageError; a
// chaos run with a figure asked for is refused before it runs.
func TestSimRefusesBeforeRunning(t *testing.T) {
	var r output
	for name, sim := range map[string]Sim{
		"tapestry insert --plot": &TapestryFlags{TapestryConfig: TapestryConfig{Seed: 1, Experiment: "insert"}},
		"d2 --scenario nope":     &D2Flags{D2Config: DefaultD2Config(), Scenario: "nope"},
		"passingtone nope":       &PassingToneFlags{Scenario: "nope", Seed: 1, Hosts: 25, Size: 8 << 10},
	} {
		var ue UsageError
		if err := sim.Run(r.Output()); !errors.As(err, &ue) {
			t.Errorf("%s: %v, want a usage error", name, err)
		}
	}
	chaos := &D2Flags{D2Config: D2Config{Seed: 1, Experiment: D2Chaos, Quick: true}}
	var ue UsageError
	if err := chaos.Run(r.Output()); err == nil || errors.As(err, &ue) || !strings.Contains(err.Error(), "draws no figure") {
		t.Errorf("d2 chaos --plot: %v", err)
	}
	if len(r.events) != 0 || r.text.Len() != 0 {
		t.Errorf("a refused run printed %v:\n%s", r.events, r.text.String())
	}
}

// sim d2 checks chaos's flags, which RunD2's Validate does not know.
func TestD2FlagsValidate(t *testing.T) {
	for _, c := range []struct {
		f    D2Flags
		want string // in the error; empty: valid
	}{
		{D2Flags{D2Config: D2Config{Experiment: "all"}}, ""},
		{D2Flags{D2Config: D2Config{Experiment: D2Chaos}}, ""},
		{D2Flags{D2Config: D2Config{Experiment: D2Chaos, Tree: "."}}, "takes no --tree"},
		{D2Flags{D2Config: D2Config{Experiment: D2Chaos, TraceFile: "t"}}, "takes no --tree, --manifest or --trace"},
		{D2Flags{D2Config: D2Config{Experiment: "nope"}}, "all or chaos"},
		{D2Flags{D2Config: D2Config{Experiment: "all", Tree: ".", Manifest: "m"}}, "give one"},
	} {
		err := c.f.Validate()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.f, err, c.want)
		}
	}
}

// --write-manifest lists a tree into a file that loads back with the
// same counts, and says so; it needs --tree.
func TestWriteManifest(t *testing.T) {
	tree := t.TempDir()
	for _, name := range []string{"a/x.go", "a/b/y.go", "z.txt"} {
		p := filepath.Join(tree, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, bytes.Repeat([]byte("x"), 100), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(t.TempDir(), "m.gz")
	var out bytes.Buffer
	f := D2Flags{D2Config: D2Config{Tree: tree}, WriteManifest: file}
	if err := f.Run(Output{Text: &out}); err != nil {
		t.Fatal(err)
	}
	m, err := workload.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	c := m.Counts()
	if c.Files != 3 || c.Bytes != 300 {
		t.Errorf("manifest counts %+v, want 3 files of 300 bytes", c)
	}
	if want := fmt.Sprintf("%s: %d files, %d directories, 300 bytes\n", file, c.Files, c.Dirs); out.String() != want {
		t.Errorf("said %q, want %q", out.String(), want)
	}
	f.Tree = ""
	if err := f.Run(Output{Text: &out}); err == nil || !strings.Contains(err.Error(), "needs --tree") {
		t.Errorf("--write-manifest without --tree: %v", err)
	}
}
