package config

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/pelletier/go-toml/v2/unstable"
)

// MaxFileBytes bounds a configuration file.
const MaxFileBytes = 1 << 20

// Sections are the tables a file may have, one per command.
var Sections = []string{"node", "nntp", "up"}

// Setting is one key of a table, its value as a flag would take it, and
// the line it is on.
type Setting struct {
	Key   string
	Value string
	Line  int
}

// Peer is one [[nntp.peer]] table: a site this one exchanges
// announcements with, or a feed.
type Peer struct {
	Name, Addr, Mode, Secret, Groups string
	File                             string // the file it is in
	Line                             int    // of the table's header
}

// File is a parsed configuration file.
type File struct {
	Path     string
	sections map[string][]Setting
	applied  map[string]int // "section.key" set on a flag by Apply: its line
	Peers    []Peer
}

// Settings returns the settings of one table, in file order.
func (f *File) Settings(section string) []Setting { return f.sections[section] }

// Load reads and parses the file at path.
func Load(path string) (*File, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, data)
}

// readFile reads a file of at most MaxFileBytes.
func readFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	if fi.Size() > MaxFileBytes {
		return nil, fmt.Errorf("config: %s: %d bytes, more than the %d a configuration may have", path, fi.Size(), MaxFileBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return data, nil
}

// lineError is a problem at one line of the file.
type lineError struct {
	path string
	line int
	msg  string
}

func (e *lineError) Error() string { return fmt.Sprintf("%s:%d: %s", e.path, e.line, e.msg) }

// Parse parses data, the text of the file at path (named in errors).
func Parse(path string, data []byte) (*File, error) { return parse(path, data, "nntp.peer") }

// LoadPeers reads a peers file: [[peer]] tables with the keys of a
// configuration file's [[nntp.peer]] (one format for both).
func LoadPeers(path string) ([]Peer, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	f, err := parse(path, data, "peer")
	if err != nil {
		return nil, err
	}
	return f.Peers, nil
}

// parse parses a configuration file, or with peerTable "peer" a peers
// file (no other tables).
func parse(path string, data []byte, peerTable string) (*File, error) {
	f := &File{Path: path, sections: map[string][]Setting{}, applied: map[string]int{}}
	var p unstable.Parser
	p.Reset(data)
	bad := func(line int, format string, args ...any) error {
		return &lineError{path, line, fmt.Sprintf(format, args...)}
	}
	lineOf := func(n *unstable.Node) int { return p.Shape(n.Raw).Start.Line }
	table := ""    // the current table: a section, or "peer"
	var peer *Peer // the current [[nntp.peer]]
	seen := map[string]int{}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.Table, unstable.ArrayTable:
			keys, first := keyParts(e)
			name := strings.Join(keys, ".")
			line := lineOf(first)
			switch {
			case e.Kind == unstable.ArrayTable && name == peerTable:
				f.Peers = append(f.Peers, Peer{File: path, Line: line})
				peer, table = &f.Peers[len(f.Peers)-1], "peer"
				seen = map[string]int{}
			case peerTable == "peer":
				return nil, bad(line, "unknown table %q: a peers file holds [[peer]] tables", name)
			case e.Kind == unstable.Table && slices.Contains(Sections, name):
				if _, dup := f.sections[name]; dup {
					return nil, bad(line, "table [%s] twice", name)
				}
				f.sections[name] = []Setting{}
				table, peer = name, nil
				seen = map[string]int{}
			default:
				return nil, bad(line, "unknown table %q: want [node], [nntp], [up] or [[nntp.peer]]", name)
			}
		case unstable.KeyValue:
			keys, first := keyParts(e)
			line := lineOf(first)
			if table == "" && peerTable == "peer" {
				return nil, bad(line, "%q is outside any table: each peer is a [[peer]] table", strings.Join(keys, "."))
			}
			if table == "" {
				return nil, bad(line, "%q is outside any table: settings go under [node], [nntp] or [up]", strings.Join(keys, "."))
			}
			if len(keys) != 1 {
				return nil, bad(line, "dotted key %q: write each setting under its table", strings.Join(keys, "."))
			}
			key := keys[0]
			if at, dup := seen[key]; dup {
				return nil, bad(line, "%s is set twice (first at line %d)", key, at)
			}
			seen[key] = line
			value, err := scalar(e.Value())
			if err != nil {
				return nil, bad(line, "%s: %v", key, err)
			}
			if peer != nil {
				if err := peer.set(key, value); err != nil {
					return nil, bad(line, "peer: %v", err)
				}
				continue
			}
			f.sections[table] = append(f.sections[table], Setting{Key: key, Value: value, Line: line})
		}
	}
	if err := p.Error(); err != nil {
		line := 1
		var perr *unstable.ParserError
		if errors.As(err, &perr) && perr.Highlight != nil {
			line = 1 + bytes.Count(data[:cap(data)-cap(perr.Highlight)], []byte("\n"))
		}
		return nil, bad(line, "not TOML: %v", err)
	}
	for _, pe := range f.Peers {
		if err := pe.Check(); err != nil {
			return nil, bad(pe.Line, "peer: %v", err)
		}
	}
	return f, nil
}

// keyParts is the key of a table header or a key/value, and its first part.
func keyParts(e *unstable.Node) ([]string, *unstable.Node) {
	var keys []string
	var first *unstable.Node
	it := e.Key()
	for it.Next() {
		n := it.Node()
		if first == nil {
			first = n
		}
		keys = append(keys, string(n.Data))
	}
	return keys, first
}

// scalar is a value as a flag takes it: strings as they are, numbers and
// booleans as written (without TOML's digit separators), and an array of
// strings joined with commas (groups = ["a.b", "c.d"]).
func scalar(v *unstable.Node) (string, error) {
	switch v.Kind {
	case unstable.String:
		return string(v.Data), nil
	case unstable.Bool:
		return string(v.Data), nil
	case unstable.Integer:
		s := strings.ReplaceAll(string(v.Data), "_", "")
		n, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			return "", fmt.Errorf("integer %s: %v", v.Data, err)
		}
		return strconv.FormatInt(n, 10), nil
	case unstable.Float:
		return strings.ReplaceAll(string(v.Data), "_", ""), nil
	case unstable.Array:
		var parts []string
		it := v.Children()
		for it.Next() {
			n := it.Node()
			if n.Kind != unstable.String {
				return "", errors.New("arrays may hold only strings")
			}
			if strings.Contains(string(n.Data), ",") {
				return "", fmt.Errorf("%q: an item of a list may not hold a comma", n.Data)
			}
			parts = append(parts, string(n.Data))
		}
		return strings.Join(parts, ","), nil
	}
	return "", fmt.Errorf("a %s is not a setting: want a string, number, boolean or array of strings", v.Kind)
}

// set sets one key of a [[nntp.peer]] table.
func (p *Peer) set(key, value string) error {
	switch key {
	case "name":
		p.Name = value
	case "addr":
		p.Addr = value
	case "mode":
		p.Mode = value
	case "secret":
		p.Secret = value
	case "groups":
		p.Groups = value
	default:
		return fmt.Errorf("unknown key %q: a peer has name, addr, mode, secret and groups", key)
	}
	return nil
}

// Check reports what is missing or malformed in a peer: a file's peers
// are checked as they are parsed, and a site checks peers made in code
// (triad up's) the same way.
func (p *Peer) Check() error {
	switch {
	case p.Name == "" || strings.ContainsAny(p.Name, "!: \t"):
		return fmt.Errorf("name %q: want the peer's Path name", p.Name)
	case p.Mode != "announce" && p.Mode != "mesh" && p.Mode != "feed":
		return fmt.Errorf("%s: mode %q: want announce, mesh or feed", p.Name, p.Mode)
	case p.Secret == "" && p.Mode != "feed":
		return fmt.Errorf("%s: an announce or mesh peer needs a secret: it is how the peer is known when it announces", p.Name)
	}
	return checkAddr(p.Addr)
}

// checkAddr checks a host:port.
func checkAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q is not host:port", addr)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Errorf("address %q: port %q is not a number from 0 to 65535", addr, port)
	}
	if host == "" {
		return fmt.Errorf("address %q has no host", addr)
	}
	return nil
}

// Apply sets on fs every setting of the table named section that the
// command line has not set (flags override the file). A key fs has no
// flag for, a value the flag refuses, an address that is not host:port
// and a negative number are errors naming the line. Keys that a file
// must not set (skip: the file's own flag, profiles) are unknown.
func (f *File) Apply(section string, fs *flag.FlagSet, skip ...string) error {
	onCommandLine := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { onCommandLine[fl.Name] = true })
	var errs []error
	for _, s := range f.sections[section] {
		fl := fs.Lookup(s.Key)
		if fl == nil || slices.Contains(skip, s.Key) {
			errs = append(errs, &lineError{f.Path, s.Line, fmt.Sprintf("unknown key %q in [%s]%s", s.Key, section, suggest(fs, s.Key, skip))})
			continue
		}
		if err := CheckValue(fl, s.Value); err != nil {
			errs = append(errs, &lineError{f.Path, s.Line, fmt.Sprintf("%s: %v", s.Key, err)})
			continue
		}
		if onCommandLine[s.Key] {
			continue
		}
		if err := fs.Set(s.Key, s.Value); err != nil {
			errs = append(errs, &lineError{f.Path, s.Line, fmt.Sprintf("%s = %q: %v", s.Key, s.Value, err)})
			continue
		}
		f.applied[section+"."+s.Key] = s.Line
	}
	return errors.Join(errs...)
}

// CheckValue checks a value for fl beyond what the flag's own parser
// does: a flag whose placeholder is `address` takes host:port (or
// nothing), and numbers and durations are never negative.
func CheckValue(fl *flag.Flag, value string) error {
	placeholder, _ := flag.UnquoteUsage(fl)
	switch {
	case placeholder == "address" && value != "":
		return checkAddr(value)
	}
	switch {
	}
	if g, ok := fl.Value.(flag.Getter); ok {
		switch g.Get().(type) {
		case int, int64, uint, uint64, float64, time.Duration:
			if strings.HasPrefix(strings.TrimSpace(value), "-") {
				return fmt.Errorf("%s is negative", value)
			}
		}
	}
	return nil
}

// suggest names the flag a mistyped key probably meant: the nearest by
// edit distance (after case, dashes and underscores), if it is near.
func suggest(fs *flag.FlagSet, key string, skip []string) string {
	norm := func(s string) string { return strings.NewReplacer("-", "", "_", "").Replace(strings.ToLower(s)) }
	best, bestD := "", 3
	fs.VisitAll(func(fl *flag.Flag) {
		if d := editDistance(norm(fl.Name), norm(key)); d < bestD && !slices.Contains(skip, fl.Name) {
			best, bestD = fl.Name, d
		}
	})
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %s?)", best)
}

// editDistance is the Levenshtein distance of a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// flagName finds the --flag names in a command's error message.
var flagName = regexp.MustCompile(`--([a-z][a-z0-9-]*)`)

// Explain adds FILE:LINE to a command's error about a flag whose value
// Apply took from table section of the file (not from the command line);
// to each of several problems joined (errors.Join), its own.
func (f *File) Explain(section string, err error) error {
	if f == nil || err == nil {
		return err
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var each []error
		for _, e := range j.Unwrap() {
			each = append(each, f.Explain(section, e))
		}
		return errors.Join(each...)
	}
	for _, m := range flagName.FindAllStringSubmatch(err.Error(), -1) {
		if line, ok := f.applied[section+"."+m[1]]; ok {
			return &lineError{f.Path, line, err.Error()}
		}
	}
	return err
}
