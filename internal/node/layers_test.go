package node_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// layer is one "must not import" rule of a doc.go, made checkable: none of
// the packages in from may depend, directly or through other packages of
// this module, on one in forbid. Paths are import paths; a group in from
// (nodeLogicGroup, driversGroup, internalGroup) stands for its packages.
type layer struct {
	pkg  string // the package under internal/ whose doc.go states the rule
	says string // the clause of that doc.go the rule encodes (spaces folded)

	from   []string // the packages constrained; pkg itself if empty
	except []string // packages of from the doc.go exempts by name
	forbid []string // import paths from must not reach
	// only, if not nil, lists the only packages of this module from may
	// reach; an empty non-nil list allows none.
	only []string
	// via lists packages from may reach others through (the doc.go's
	// "only through"): they are not followed.
	via []string
	// sansIO: the clause's "os, net, sync, the wall clock..." part is
	// TestNodePackagesStaySansIO's; pkg must be in its nodeLogic list.
	sansIO bool
	// debt lists known violations as import edges "a -> b" (paths under
	// internal/) that the check neither reports nor follows, each with the
	// reason and the issue that removes it. An edge that no longer exists
	// fails the test, so the debt is crossed off when it is paid.
	debt map[string]string
}

// Groups usable in layer.from.
const (
	nodeLogicGroup = "<node logic>" // the nodeLogic list of purity_test.go
	driversGroup   = "<drivers>"    // internal/tcp and internal/sim
	internalGroup  = "<internal>"   // every package under internal/
)

// in is the import path of a package under internal/.
func in(name string) string { return module + "/internal/" + name }

// protocols is the packages of the named protocols, each with the
// packages under it (usenet/nntpd, d2/key...): the folders under
// internal/ (this test runs in internal/node).
func protocols(names ...string) []string {
	var out []string
	for _, name := range names {
		filepath.WalkDir(filepath.Join("..", name), func(p string, e fs.DirEntry, err error) error {
			if err == nil && e.IsDir() && e.Name() != "testdata" {
				out = append(out, in(filepath.ToSlash(strings.TrimPrefix(p, ".."+string(filepath.Separator)))))
			}
			return nil
		})
	}
	return out
}

// layers is every doc.go's import rule. TestLayers checks that each clause
// is still in its doc.go and that every doc.go stating such a rule has an
// entry here.
var layers = []layer{
	{pkg: "client", says: "it must not import a driver (tcp, sim), the ring or the storage engine",
		forbid: []string{in("tcp"), in("sim"), in("ring"), in("store/disk"), in("store/mem")}},
	{pkg: "client", says: "node-logic packages must not import it",
		from: []string{nodeLogicGroup}, forbid: []string{in("client")}},
	{pkg: "deploy", says: "node-logic packages never import it",
		from: []string{nodeLogicGroup}, forbid: []string{in("deploy")}},
	{pkg: "dhash", says: "It must not import os, net, sync, syscall, the wall clock, global randomness or a driver",
		sansIO: true, forbid: []string{in("tcp"), in("sim")}},
	{pkg: "exp", says: "it must not import the tcp driver",
		forbid: []string{in("tcp")}},
	{pkg: "exp", says: "nothing under internal/ may import it but figure",
		from: []string{internalGroup}, forbid: []string{in("exp")}, except: []string{in("figure")}},
	{pkg: "files", says: "node logic never imports it",
		from: []string{nodeLogicGroup}, forbid: []string{in("files")}},
	{pkg: "maint", says: "It must not import os, net, sync, the wall clock or global randomness",
		sansIO: true},
	{pkg: "merkle", says: "Layer: node logic, above id only. It must not import os, net, sync, syscall, the wall clock, global randomness or the storage engine",
		sansIO: true, only: []string{in("id")}},
	{pkg: "node", says: "must not import a driver, os, net, sync, syscall, the wall clock or global randomness",
		sansIO: true, forbid: []string{in("tcp"), in("sim")}},
	{pkg: "rpc", says: "It must not import os, net, sync, syscall, the wall clock, global randomness or a driver",
		sansIO: true, forbid: []string{in("tcp"), in("sim")}},
	{pkg: "ring", says: "It must not import os, net, sync, syscall, the wall clock, global randomness, the storage engine or a driver",
		sansIO: true, forbid: []string{in("store/disk"), in("store/mem"), in("tcp"), in("sim")}},
	{pkg: "sim", says: "it must not import the tcp driver or do network I/O",
		forbid: []string{in("tcp"), "net"}},
	{pkg: "sim", says: "node logic must never import it",
		from: []string{nodeLogicGroup}, forbid: []string{in("sim")}},
	{pkg: "tcp", says: "node logic must never import it",
		from: []string{nodeLogicGroup}, forbid: []string{in("tcp")}},
	// Issue 45: the drivers and the contract name no protocol, so that a
	// new one plugs in without editing them.
	{pkg: "tcp", says: "It imports no other protocol (dhash, maint, d2, tapestry, usenet)",
		forbid: protocols("dhash", "maint", "d2", "tapestry", "usenet")},
	{pkg: "sim", says: "It imports no protocol (ring, dhash, maint, d2, tapestry, usenet)",
		forbid: protocols("ring", "dhash", "maint", "d2", "tapestry", "usenet")},
	{pkg: "node", says: "The contract imports no protocol (ring, dhash, maint, d2, tapestry, usenet)",
		forbid: protocols("ring", "dhash", "maint", "d2", "tapestry", "usenet")},
	{pkg: "host", says: "never os, net, sync, the wall clock or goroutines",
		sansIO: true},
	{pkg: "d2", says: "It must not import os, net, sync, syscall, the wall clock, global randomness or a driver",
		sansIO: true, forbid: []string{in("tcp"), in("sim")}},
	{pkg: "tapestry", says: "It must not import os, net, sync, syscall, the wall clock, global randomness or a driver",
		sansIO: true, forbid: []string{in("tcp"), in("sim")}},
	{pkg: "bench", says: "no package under internal/ may import it",
		from: []string{internalGroup}, forbid: []string{in("bench")}},
	{pkg: "usenet", says: "it must not import the client, wire, dhash or the node runtime (node, ring, rpc, sim, tcp), bench or cmd",
		forbid: []string{in("client"), in("wire"), in("dhash"), in("node"), in("ring"), in("rpc"), in("sim"), in("tcp"), in("bench"), module + "/cmd/triad"}},
	{pkg: "usenet", says: "Node-logic packages and the drivers must not import it",
		from: []string{nodeLogicGroup, driversGroup}, forbid: []string{in("usenet")}},
	{pkg: "usenet/nntpd", says: "It must not import the client, wire, dhash or the node runtime (node, ring, rpc, sim, tcp), peering, bench or cmd",
		forbid: []string{in("client"), in("wire"), in("dhash"), in("node"), in("ring"), in("rpc"), in("sim"), in("tcp"), in("usenet/peering"), in("bench"), module + "/cmd/triad"}},
	{pkg: "usenet/peering", says: "It must not import the client, wire, dhash or the node runtime (node, ring, rpc, sim, tcp), nntpd, bench or cmd",
		forbid: []string{in("client"), in("wire"), in("dhash"), in("node"), in("ring"), in("rpc"), in("sim"), in("tcp"), in("usenet/nntpd"), in("bench"), module + "/cmd/triad"}},
	{pkg: "vfs", says: "It imports no other package of triad",
		only: []string{}},
	{pkg: "vfs", says: "node-logic packages must not import it",
		from: []string{nodeLogicGroup}, forbid: []string{in("vfs")}},
	{pkg: "vivaldi", says: "it must not import os, net, sync, the wall clock or global randomness",
		sansIO: true},
	{pkg: "wire", says: "It must not import os, net, sync, syscall, the wall clock, global randomness or any package above it",
		sansIO: true, only: []string{in("id"), in("fault")}},
	{pkg: "fault", says: "It imports no other package of triad",
		only: []string{}},
	{pkg: "testutil", says: "Only tests and test-helper packages (deploytest, storetest, e2e) may import it",
		from: []string{internalGroup, module + "/cmd/triad"}, forbid: []string{in("testutil")},
		except: []string{in("deploy/deploytest"), in("store/storetest"), in("e2e")}},
	{pkg: "proc", says: "It imports no other package of triad",
		only: []string{}},
	{pkg: "proc", says: "only internal/bench, the tests and their harness (e2e) may import it",
		from: []string{internalGroup, module + "/cmd/triad"}, forbid: []string{in("proc")},
		except: []string{in("bench"), in("e2e")}, via: []string{in("bench")}},
	{pkg: "e2e", says: "only tests import it",
		from: []string{internalGroup, module + "/cmd/triad"}, forbid: []string{in("e2e")}},
	{pkg: "deploy", says: "it must not import the simulator",
		forbid: []string{in("sim")}},
	{pkg: "noded", says: "it must not import the simulator",
		forbid: []string{in("sim")}},
	{pkg: "noded", says: "it must not import d2 or tapestry",
		forbid: protocols("d2", "tapestry"), via: []string{in("deploy")}},
	{pkg: "newsd", says: "it must not import the simulator",
		forbid: []string{in("sim")}},
	{pkg: "store/disk", says: "Node logic must not import it",
		from: []string{nodeLogicGroup}, forbid: []string{in("store/disk")}},
}

// ruleSentence finds a doc.go that states an import rule; each such doc.go
// must have an entry in layers.
var ruleSentence = regexp.MustCompile(`not import|never import|may import it|imports no other|; never os`)

// checkLayer returns the violations of l in graph (each package of this
// module with its direct imports), each with its import chain, and the debt
// edges it met.
func checkLayer(l layer, graph map[string][]string) (violations []string, paid map[string]bool) {
	paid = map[string]bool{}
	short := func(p string) string { return strings.TrimPrefix(p, module+"/internal/") }
	for _, root := range expand(l, graph) {
		if slices.Contains(l.forbid, root) {
			continue
		}
		parent := map[string]string{root: ""}
		chain := func(p string) string {
			c := []string{p}
			for q := parent[p]; q != ""; q = parent[q] {
				c = append(c, q)
			}
			slices.Reverse(c)
			return strings.Join(c, " -> ")
		}
		for queue := []string{root}; len(queue) > 0; queue = queue[1:] {
			p := queue[0]
			for _, q := range graph[p] {
				if edge := short(p) + " -> " + short(q); l.debt[edge] != "" {
					paid[edge] = true
					continue
				}
				_, ours := graph[q]
				bad := slices.Contains(l.forbid, q) ||
					ours && l.only != nil && q != root && !slices.Contains(l.only, q)
				if bad {
					violations = append(violations, chain(p)+" -> "+q)
					continue
				}
				if _, seen := parent[q]; !ours || seen || slices.Contains(l.via, q) {
					continue
				}
				parent[q] = p
				queue = append(queue, q)
			}
		}
	}
	return violations, paid
}

// expand returns the packages l constrains, sorted.
func expand(l layer, graph map[string][]string) []string {
	if len(l.from) == 0 {
		return []string{in(l.pkg)}
	}
	var out []string
	for _, g := range l.from {
		switch g {
		case nodeLogicGroup:
			for _, p := range nodeLogic {
				if _, ok := graph[in(p.name)]; ok {
					out = append(out, in(p.name))
				}
			}
		case driversGroup:
			out = append(out, in("tcp"), in("sim"))
		case internalGroup:
			for p := range graph {
				if strings.HasPrefix(p, module+"/internal/") {
					out = append(out, p)
				}
			}
		default:
			out = append(out, g)
		}
	}
	out = slices.DeleteFunc(out, func(p string) bool { return slices.Contains(l.except, p) })
	slices.Sort(out)
	return slices.Compact(out)
}

// isNodeLogic reports whether the purity test checks the package.
func isNodeLogic(name string) bool {
	for _, p := range nodeLogic {
		if p.name == name {
			return true
		}
	}
	return false
}

// loadGraph lists every package of this module with its direct imports
// (test files excluded: the rules are about what a package is built from).
func loadGraph(t *testing.T) map[string][]string {
	t.Helper()
	graph := map[string][]string{}
	for _, p := range goList(t, module+"/...") {
		graph[p.ImportPath] = p.Imports
	}
	return graph
}

// docTexts returns the package comment of every doc.go under internal/,
// keyed by its directory under internal/, with runs of spaces folded to one.
func docTexts(t *testing.T) map[string]string {
	t.Helper()
	root := filepath.Join("..", "..", "internal")
	docs := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() && d.Name() == "testdata" {
			if err == nil {
				err = filepath.SkipDir
			}
			return err
		}
		if d.Name() != "doc.go" {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil || f.Doc == nil {
			return err
		}
		dir, err := filepath.Rel(root, filepath.Dir(path))
		docs[filepath.ToSlash(dir)] = strings.Join(strings.Fields(f.Doc.Text()), " ")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return docs
}

// TestLayers checks every doc.go's "must not import" rule against the
// module's import graph, beside TestNodePackagesStaySansIO, which checks
// node logic's own (no os, net, sync, clock, global randomness, goroutines).
func TestLayers(t *testing.T) {
	docs := docTexts(t)
	covered := map[string]bool{}
	for _, l := range layers {
		covered[l.pkg] = true
		text, ok := docs[l.pkg]
		switch {
		case !ok:
			t.Errorf("layers names %s, which has no doc.go", l.pkg)
		case !strings.Contains(text, l.says):
			t.Errorf("%s/doc.go no longer says %q: update its entry in layers to what it says now", l.pkg, l.says)
		}
		if l.sansIO && !isNodeLogic(l.pkg) {
			t.Errorf("%s/doc.go leaves its rule to TestNodePackagesStaySansIO, whose nodeLogic does not list it", l.pkg)
		}
	}
	var dirs []string
	for dir := range docs {
		dirs = append(dirs, dir)
	}
	slices.Sort(dirs)
	for _, dir := range dirs {
		if ruleSentence.MatchString(docs[dir]) && !covered[dir] {
			t.Errorf("%s/doc.go states an import rule (%q) that layers does not check", dir, ruleSentence.FindString(docs[dir]))
		}
	}

	graph := loadGraph(t)
	for _, l := range layers {
		violations, paid := checkLayer(l, graph)
		for _, v := range violations {
			t.Errorf("%s/doc.go says %q, but %s", l.pkg, l.says, v)
		}
		for _, edge := range slices.Sorted(maps.Keys(l.debt)) {
			if !paid[edge] {
				t.Errorf("%s: known exception %q no longer occurs: remove it from layers", l.pkg, edge)
			} else {
				t.Logf("known exception to %s/doc.go's rule: %s (%s)", l.pkg, edge, l.debt[edge])
			}
		}
	}
}

// TestCheckLayer runs the checker on made-up graphs: a planted import two
// levels down fails it, and debt, via and only work as documented.
func TestCheckLayer(t *testing.T) {
	a, b, c, ring := in("a"), in("b"), in("c"), in("ring")
	for _, tc := range []struct {
		name  string
		l     layer
		graph map[string][]string
		want  []string
		paid  []string
	}{
		{"clean", layer{pkg: "a", forbid: []string{ring}},
			map[string][]string{a: {b, "fmt"}, b: {"os"}, ring: nil}, nil, nil},
		{"planted import two levels down", layer{pkg: "a", forbid: []string{ring}},
			map[string][]string{a: {b}, b: {c}, c: {ring}, ring: nil},
			[]string{a + " -> " + b + " -> " + c + " -> " + ring}, nil},
		{"standard library package", layer{pkg: "a", forbid: []string{"net"}},
			map[string][]string{a: {b}, b: {"net", "fmt"}},
			[]string{a + " -> " + b + " -> net"}, nil},
		{"debt edge neither reported nor followed", layer{pkg: "a", forbid: []string{ring}, debt: map[string]string{"b -> c": "why"}},
			map[string][]string{a: {b}, b: {c}, c: {ring}, ring: nil}, nil, []string{"b -> c"}},
		{"debt covers one edge only", layer{pkg: "a", forbid: []string{ring}, debt: map[string]string{"b -> c": "why"}},
			map[string][]string{a: {b, ring}, b: {c}, c: {ring}, ring: nil},
			[]string{a + " -> " + ring}, []string{"b -> c"}},
		{"via is not followed", layer{pkg: "a", forbid: []string{ring}, via: []string{b}},
			map[string][]string{a: {b}, b: {ring}, ring: nil}, nil, nil},
		{"only", layer{pkg: "a", only: []string{b}},
			map[string][]string{a: {b, "os"}, b: {c}, c: nil},
			[]string{a + " -> " + b + " -> " + c}, nil},
		{"only: none", layer{pkg: "a", only: []string{}},
			map[string][]string{a: {b}, b: nil}, []string{a + " -> " + b}, nil},
		{"group, the forbidden package itself skipped", layer{pkg: "c", from: []string{internalGroup}, forbid: []string{c}},
			map[string][]string{a: {b}, b: {c}, c: {"os"}},
			[]string{a + " -> " + b + " -> " + c, b + " -> " + c}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, paid := checkLayer(tc.l, tc.graph)
			if !slices.Equal(got, tc.want) {
				t.Errorf("got\n\t%s\nwant\n\t%s", strings.Join(got, "\n\t"), strings.Join(tc.want, "\n\t"))
			}
			if gotPaid := slices.Sorted(maps.Keys(paid)); !slices.Equal(gotPaid, tc.paid) {
				t.Errorf("debt met %v, want %v", gotPaid, tc.paid)
			}
		})
	}
}
