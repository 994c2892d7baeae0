package main

import (
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
)

// genFile is the Go file wiregen writes; it never reads it.
const genFile = "msgs_gen.go"

func main() {
	dir := flag.String("dir", ".", "the wire package's folder")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: wiregen [-dir DIR]\n\n"+
			"wiregen writes %s, schema.proto's generated half and the new lines of\n"+
			"testdata/types.txt from the message declarations in DIR's Go files.\n", genFile)
		flag.PrintDefaults()
	}
	flag.Parse()
	if err := run(*dir); err != nil {
		fmt.Fprintln(os.Stderr, "wiregen:", err)
		os.Exit(1)
	}
}

func run(dir string) error {
	pkg, err := parse(dir)
	if err != nil {
		return err
	}
	code, err := pkg.goCode()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, genFile), code, 0o644); err != nil {
		return err
	}
	if err := pkg.writeSchema(filepath.Join(dir, "schema.proto")); err != nil {
		return err
	}
	return pkg.appendRegistry(filepath.Join(dir, "testdata", "types.txt"))
}

// A kind is how one Go type travels in a protobuf field.
type kind int

const (
	kBool kind = iota
	kUint64
	kUint32
	kInt64 // zig-zag
	kString
	kBytes
	kID     // id.ID: its bytes
	kNode   // NodeRef: a nested {1: id, 2: addr, 3: machine}
	kStruct // a declared struct, nested
)

// A field is one struct field with its wire tag.
type field struct {
	name     string
	num      int
	kind     kind
	repeated bool
	goType   string // the element's Go type, for conversions and nested structs
	conv     bool   // goType is a named integer type: convert to and from its kind
	max      string // a bound: bytes or characters, elements of a list, or an integer's value
	each     string // a list of strings: each one's bound in bytes (default MaxTextBytes)
	noID     bool   // a NodeRef that may lack an ID
}

// A decl is a message (num > 0) or a nested struct.
type decl struct {
	name   string
	num    int
	role   string // node, client or operator
	big    bool   // a request whose reply may hold a block
	fields []field
	doc    string
}

type pkg struct {
	decls    map[string]*decl
	msgs     []*decl // by number
	structs  []*decl // by name
	ranges   []rangeDecl
	named    map[string]string // local named integer type -> its underlying type
	fileName map[string]string // decl -> file, for errors
}

type rangeDecl struct {
	protocol string
	lo, hi   int
}

var roles = map[string]string{"node": "RoleNode", "client": "RoleClient", "operator": "RoleOperator"}

func parse(dir string) (*pkg, error) {
	fset := token.NewFileSet()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	p := &pkg{decls: map[string]*decl{}, named: map[string]string{}, fileName: map[string]string{}}
	var todo []pending
	for _, path := range paths {
		base := filepath.Base(path)
		if strings.HasSuffix(base, "_test.go") || base == genFile {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, gd := range f.Decls {
			g, ok := gd.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range g.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if id, ok := s.Type.(*ast.Ident); ok {
						p.named[s.Name.Name] = id.Name
					}
					doc := s.Doc
					if doc == nil && len(g.Specs) == 1 {
						doc = g.Doc
					}
					d, err := directive(s.Name.Name, doc)
					if err != nil {
						return nil, fmt.Errorf("%s: %v", fset.Position(s.Pos()), err)
					}
					if d == nil {
						continue
					}
					st, ok := s.Type.(*ast.StructType)
					if !ok {
						return nil, fmt.Errorf("%s: %s: a wire declaration must be a struct", fset.Position(s.Pos()), s.Name.Name)
					}
					p.decls[d.name] = d
					p.fileName[d.name] = base
					todo = append(todo, pending{d, st, fset.Position(s.Pos()).String()})
				case *ast.ValueSpec:
					if len(s.Names) == 1 && s.Names[0].Name == "ranges" && len(s.Values) == 1 {
						p.ranges, err = parseRanges(fset, s.Values[0])
						if err != nil {
							return nil, err
						}
					}
				}
			}
		}
	}
	if len(p.ranges) == 0 {
		return nil, fmt.Errorf("no ranges table in %s", dir)
	}
	if err := p.readFields(todo); err != nil {
		return nil, err
	}
	seen := map[int]string{}
	for _, d := range p.decls {
		if d.num == 0 {
			p.structs = append(p.structs, d)
			continue
		}
		if other, dup := seen[d.num]; dup {
			return nil, fmt.Errorf("%s and %s both take number %d", other, d.name, d.num)
		}
		seen[d.num] = d.name
		if _, ok := p.rangeOf(d.num); !ok {
			return nil, fmt.Errorf("%s: number %d lies in no protocol's range", d.name, d.num)
		}
		p.msgs = append(p.msgs, d)
	}
	sort.Slice(p.msgs, func(i, j int) bool { return p.msgs[i].num < p.msgs[j].num })
	sort.Slice(p.structs, func(i, j int) bool { return p.structs[i].name < p.structs[j].name })
	return p, nil
}

// pending is a declaration whose fields are still to read.
type pending struct {
	d    *decl
	st   *ast.StructType
	file string
}

// readFields reads the fields of every declaration, reporting every
// field in error at once.
func (p *pkg) readFields(todo []pending) error {
	var errs []string
	for _, t := range todo {
		for _, fl := range t.st.Fields.List {
			if len(fl.Names) != 1 {
				errs = append(errs, fmt.Sprintf("%s: %s: declare each field on its own line, with its tag", t.file, t.d.name))
				continue
			}
			f, err := p.field(fl)
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s: %s.%s: %v", t.file, t.d.name, fl.Names[0].Name, err))
				continue
			}
			for _, g := range t.d.fields {
				if g.num == f.num {
					return fmt.Errorf("%s: %s: fields %s and %s share number %d", t.file, t.d.name, g.name, f.name, f.num)
				}
			}
			t.d.fields = append(t.d.fields, f)
		}
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "\n"))
	}
	return nil
}

// directive reads a type's "//wire:msg NUMBER ROLE [big]" or
// "//wire:struct" line; nil for a type with neither.
func directive(name string, doc *ast.CommentGroup) (*decl, error) {
	if doc == nil {
		return nil, nil
	}
	var text []string
	var d *decl
	for _, c := range doc.List {
		line := strings.TrimPrefix(c.Text, "//")
		switch {
		case strings.HasPrefix(line, "wire:struct"):
			d = &decl{name: name}
		case strings.HasPrefix(line, "wire:msg"):
			w := strings.Fields(strings.TrimPrefix(line, "wire:msg"))
			if len(w) < 2 {
				return nil, fmt.Errorf("%s: want //wire:msg NUMBER ROLE [big]", name)
			}
			num, err := strconv.Atoi(w[0])
			if err != nil || num <= 0 || num > 0xffff {
				return nil, fmt.Errorf("%s: bad message number %q", name, w[0])
			}
			if roles[w[1]] == "" {
				return nil, fmt.Errorf("%s: role %q is none of node, client, operator", name, w[1])
			}
			d = &decl{name: name, num: num, role: w[1]}
			for _, o := range w[2:] {
				if o != "big" {
					return nil, fmt.Errorf("%s: unknown option %q", name, o)
				}
				d.big = true
			}
		default:
			text = append(text, strings.TrimSpace(line))
		}
	}
	if d != nil {
		d.doc = firstSentence(strings.Join(text, " "))
	}
	return d, nil
}

func firstSentence(s string) string {
	s = strings.TrimSpace(s)
	for i := 0; i+2 < len(s); i++ {
		if s[i] != '.' || s[i+1] != ' ' || s[i+2] < 'A' || s[i+2] > 'Z' {
			continue
		}
		if w := s[strings.LastIndexByte(s[:i], ' ')+1 : i]; w == "Fig" || w == "e.g" || w == "i.e" {
			continue
		}
		return s[:i+1]
	}
	return s
}

func parseRanges(fset *token.FileSet, e ast.Expr) ([]rangeDecl, error) {
	cl, ok := e.(*ast.CompositeLit)
	if !ok {
		return nil, fmt.Errorf("%s: ranges is not a literal", fset.Position(e.Pos()))
	}
	var out []rangeDecl
	for _, el := range cl.Elts {
		r, ok := el.(*ast.CompositeLit)
		if !ok || len(r.Elts) != 3 {
			return nil, fmt.Errorf("%s: a range is {protocol, lo, hi}", fset.Position(el.Pos()))
		}
		var v [3]string
		for i, x := range r.Elts {
			lit, ok := x.(*ast.BasicLit)
			if !ok {
				return nil, fmt.Errorf("%s: a range holds literals only", fset.Position(x.Pos()))
			}
			v[i] = lit.Value
		}
		proto, _ := strconv.Unquote(v[0])
		lo, _ := strconv.Atoi(v[1])
		hi, _ := strconv.Atoi(v[2])
		out = append(out, rangeDecl{protocol: proto, lo: lo, hi: hi})
	}
	return out, nil
}

func (p *pkg) rangeOf(num int) (rangeDecl, bool) {
	for _, r := range p.ranges {
		if r.lo <= num && num <= r.hi {
			return r, true
		}
	}
	return rangeDecl{}, false
}

// field reads one struct field and its `wire:"NUM[,max=CONST][,each=CONST][,noid]"`
// tag: max bounds a list's length, a byte string's or a string's bytes, or
// an integer; each bounds every string of a list of strings.
func (p *pkg) field(fl *ast.Field) (field, error) {
	f := field{name: fl.Names[0].Name}
	if fl.Tag == nil {
		return f, fmt.Errorf("no wire tag")
	}
	raw, _ := strconv.Unquote(fl.Tag.Value)
	tag, ok := reflect.StructTag(raw).Lookup("wire")
	if !ok {
		return f, fmt.Errorf("no wire tag")
	}
	parts := strings.Split(tag, ",")
	num, err := strconv.Atoi(parts[0])
	if err != nil || num <= 0 || num >= 1<<29 {
		return f, fmt.Errorf("bad field number %q", parts[0])
	}
	f.num = num
	for _, o := range parts[1:] {
		switch {
		case strings.HasPrefix(o, "max="):
			f.max = strings.TrimPrefix(o, "max=")
		case strings.HasPrefix(o, "each="):
			f.each = strings.TrimPrefix(o, "each=")
		case o == "noid":
			f.noID = true
		default:
			return f, fmt.Errorf("unknown tag option %q", o)
		}
	}
	t := fl.Type
	if at, ok := t.(*ast.ArrayType); ok && at.Len == nil {
		if id, ok := at.Elt.(*ast.Ident); ok && id.Name == "byte" {
			f.kind, f.goType = kBytes, "[]byte"
			return f, nil
		}
		f.repeated = true
		t = at.Elt
	}
	if err := p.elem(&f, t); err != nil {
		return f, err
	}
	if f.noID && f.kind != kNode {
		return f, fmt.Errorf("noid is for a NodeRef")
	}
	if f.each != "" && !(f.repeated && f.kind == kString) {
		return f, fmt.Errorf("each is for a list of strings")
	}
	return f, nil
}

func (p *pkg) elem(f *field, t ast.Expr) error {
	switch t := t.(type) {
	case *ast.SelectorExpr:
		x, _ := t.X.(*ast.Ident)
		if x == nil {
			break
		}
		switch x.Name + "." + t.Sel.Name {
		case "id.ID":
			f.kind, f.goType = kID, "id.ID"
			return nil
		case "fault.Code":
			f.kind, f.goType, f.conv = kUint32, "fault.Code", true
			return nil
		}
	case *ast.Ident:
		f.goType = t.Name
		switch t.Name {
		case "bool":
			f.kind = kBool
		case "uint64":
			f.kind = kUint64
		case "uint32":
			f.kind = kUint32
		case "int64":
			f.kind = kInt64
		case "string":
			f.kind = kString
		case "NodeRef":
			f.kind = kNode
		default:
			if _, ok := p.decls[t.Name]; ok {
				f.kind = kStruct
				return nil
			}
			switch p.named[t.Name] {
			case "uint32", "uint8", "uint16":
				f.kind, f.conv = kUint32, true
			case "uint64":
				f.kind, f.conv = kUint64, true
			default:
				return fmt.Errorf("type %s has no wire form: declare it //wire:struct", t.Name)
			}
		}
		return nil
	}
	return fmt.Errorf("type %T has no wire form", t)
}

// needsDeep reports whether copying a value of struct d shares memory.
func (p *pkg) needsDeep(d *decl) bool {
	for _, f := range d.fields {
		if f.repeated || f.kind == kBytes || (f.kind == kStruct && p.needsDeep(p.decls[f.goType])) {
			return true
		}
	}
	return false
}
