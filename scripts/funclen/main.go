package main

import (
	"cmp"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// maxLines is the longest a function may be outside a dispatch switch.
const maxLines = 100

// long is a function over maxLines lines.
type long struct {
	pos      token.Position // of its func keyword
	name     string         // Recv.Name for a method
	lines    int            // from func to its closing brace
	dispatch bool           // mostly one switch: allowed
}

func main() {
	roots := os.Args[1:]
	if len(roots) == 0 {
		roots = []string{"."}
	}
	var found []long
	for _, root := range roots {
		fs, err := scanTree(root)
		if err != nil {
			fmt.Fprintln(os.Stderr, "funclen:", err)
			os.Exit(1)
		}
		found = append(found, fs...)
	}
	slices.SortStableFunc(found, func(a, b long) int { return cmp.Compare(b.lines, a.lines) })
	n, dispatch := 0, 0
	for _, f := range found {
		note := ""
		if f.dispatch {
			dispatch++
			note = " (a dispatch switch: not counted)"
		} else {
			n++
		}
		fmt.Printf("%s:%d: %s: %d lines%s\n", f.pos.Filename, f.pos.Line, f.name, f.lines, note)
	}
	fmt.Printf("funclen: %d functions over %d lines outside a dispatch switch (and %d dispatch switches)\n",
		n, maxLines, dispatch)
	if n > 0 {
		os.Exit(1)
	}
}

// scanTree returns the long functions of the non-test Go files under root,
// in file order.
func scanTree(root string) ([]long, error) {
	var out []long
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		out = append(out, scanFile(fset, f)...)
		return nil
	})
	return out, err
}

// scanFile returns the functions of f longer than maxLines.
func scanFile(fset *token.FileSet, f *ast.File) []long {
	var out []long
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		lines := span(fset, fn)
		if lines <= maxLines {
			continue
		}
		out = append(out, long{
			pos:      fset.Position(fn.Pos()),
			name:     funcName(fn),
			lines:    lines,
			dispatch: 2*largestSwitch(fset, fn.Body) >= lines,
		})
	}
	return out
}

// largestSwitch is the span in lines of the longest switch, type switch or
// select that is a statement of body or of a loop that is one.
func largestSwitch(fset *token.FileSet, body *ast.BlockStmt) int {
	best := 0
	for _, s := range body.List {
		switch s := s.(type) {
		case *ast.SwitchStmt, *ast.TypeSwitchStmt, *ast.SelectStmt:
			best = max(best, span(fset, s))
		case *ast.ForStmt:
			best = max(best, largestSwitch(fset, s.Body))
		case *ast.RangeStmt:
			best = max(best, largestSwitch(fset, s.Body))
		}
	}
	return best
}

// span is the number of lines n covers.
func span(fset *token.FileSet, n ast.Node) int {
	return fset.Position(n.End()).Line - fset.Position(n.Pos()).Line + 1
}

// funcName is fn's name, with its receiver's type for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr: // generic receiver
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}
