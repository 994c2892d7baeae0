package node_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryPackageHasDocGo holds every package under internal/ and cmd/ to
// STYLE.md's rule: its package comment lives in doc.go, and only there, and
// starts with "Package <name>" (or "Command" for a main package).
func TestEveryPackageHasDocGo(t *testing.T) {
	for _, top := range []string{filepath.Join("..", "..", "internal"), filepath.Join("..", "..", "cmd")} {
		err := filepath.WalkDir(top, func(dir string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() {
				return nil
			}
			if d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			checkDocGo(t, dir)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// checkDocGo checks one directory, if it holds a package.
func checkDocGo(t *testing.T, dir string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	hasDoc, isPkg := false, false
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		isPkg = true
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if filepath.Base(name) != "doc.go" {
			if f.Doc != nil {
				t.Errorf("%s: the package comment belongs in doc.go", name)
			}
			continue
		}
		hasDoc = true
		want := "Package " + f.Name.Name + " "
		if f.Name.Name == "main" {
			want = "Command "
		}
		if f.Doc == nil || !strings.HasPrefix(f.Doc.Text(), want) {
			t.Errorf("%s: no package comment starting %q", name, want)
		}
	}
	if isPkg && !hasDoc {
		t.Errorf("%s: no doc.go", dir)
	}
}
