package figure

import (
	"encoding/xml"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"triad/internal/exp"
)

// svgTexts is every text element of the SVG file at path, which must
// parse as XML with an svg root.
func svgTexts(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	d := xml.NewDecoder(f)
	var texts []string
	root, inText := "", false
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s is not XML: %v", path, err)
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
			inText = tok.Name.Local == "text"
		case xml.CharData:
			if inText {
				texts = append(texts, strings.TrimSpace(string(tok)))
			}
		case xml.EndElement:
			inText = false
		}
	}
	if root != "svg" {
		t.Fatalf("%s: root element %q, want svg", path, root)
	}
	return texts
}

// countPrefix is how many of texts start with prefix.
func countPrefix(texts []string, prefix string) int {
	n := 0
	for _, s := range texts {
		if strings.HasPrefix(s, prefix) {
			n++
		}
	}
	return n
}

// A small quick run of each experiment that draws is drawn as SVG with the
// panels of that experiment only, each with its series in the legend; the
// rdp run also as PNG; a run of an experiment with no figure is refused.
func TestTapestryFigures(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		experiment string
		figures    []string
		// legend entries and how many times each appears
		legends map[string]int
	}{
		{"rdp", []string{"Fig. 13", "Fig. 14"}, map[string]int{"90th percentile": 2, "median": 2, "minimum": 2}},
		{"massive", []string{"Fig. 19", "Fig. 20"}, map[string]int{"9 fail": 2, "19 join": 2}},
		{"churn", []string{"Fig. 21", "Fig. 22"}, map[string]int{"churn 1": 2, "churn 2": 2}},
	} {
		res, err := exp.RunTapestry(exp.TapestryConfig{Seed: 3, Experiment: tc.experiment, Nodes: 48, Quick: true})
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, tc.experiment+".svg")
		if err := Tapestry(res, path); err != nil {
			t.Fatalf("%s: %v", tc.experiment, err)
		}
		texts := svgTexts(t, path)
		for _, fig := range []string{"Fig. 13", "Fig. 14", "Fig. 15", "Fig. 19", "Fig. 20", "Fig. 21", "Fig. 22"} {
			want := 0
			if slices.Contains(tc.figures, fig) {
				want = 1
			}
			if got := countPrefix(texts, fig+":"); got != want {
				t.Errorf("%s: %d panels titled %s, want %d", tc.experiment, got, fig, want)
			}
		}
		for label, want := range tc.legends {
			if got := countPrefix(texts, label); got != want {
				t.Errorf("%s: %q appears %d times, want %d (texts %q)", tc.experiment, label, got, want, texts)
			}
		}
		if tc.experiment != "rdp" {
			continue
		}
		pngPath := filepath.Join(dir, "rdp.png")
		if err := Tapestry(res, pngPath); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(pngPath)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil || img.Bounds().Dx() < 600 || img.Bounds().Dy() < 300 {
			t.Errorf("rdp.png: %v, %v", err, img)
		}
	}
	if err := Tapestry(exp.TapestryResult{Series: &exp.TapestrySeries{}}, filepath.Join(dir, "none.svg")); err == nil {
		t.Error("drew a run with no experiment that has a figure")
	}
}

// Fig. 15 draws both meshes' 90th percentiles and medians, each labelled
// with its pointers per object.
func TestTapestryOptFigure(t *testing.T) {
	pts := []exp.TapRDP{{Ms: 1, RDP: 20}, {Ms: 3, RDP: 8}, {Ms: 40, RDP: 1.4}, {Ms: 80, RDP: 1.1}}
	res := exp.TapestryResult{BasePointersPerObject: 3.6, OptPointersPerObject: 5.7,
		Series: &exp.TapestrySeries{OptBase: pts, Opt: pts[1:]}}
	path := filepath.Join(t.TempDir(), "opt.svg")
	if err := Tapestry(res, path); err != nil {
		t.Fatal(err)
	}
	texts := svgTexts(t, path)
	for label, want := range map[string]int{"Fig. 15:": 1, "(0,0,0) [3.6 pointers/object]": 2, "(1,1,1) [5.7 pointers/object]": 2, "Fig. 13:": 0} {
		if got := countPrefix(texts, label); got != want {
			t.Errorf("%q appears %d times, want %d", label, got, want)
		}
	}
}
