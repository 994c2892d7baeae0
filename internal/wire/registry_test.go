package wire

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"triad/internal/fault"
)

// entry is one line of a registry file in testdata: a number, the name it
// was given and, for message types, its protocol.
type entry struct {
	line     int
	num      uint64
	protocol string
	name     string
	retired  bool
	renames  string // a rename line: the name num had until this line
}

// readRegistry parses a registry whose lines have cols fields (plus an
// optional "retired", or "renames OLD" on a line that renames a number's
// message); # starts a comment line.
func readRegistry(t *testing.T, path string, cols int) []entry {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []entry
	for i, l := range strings.Split(string(b), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Fields(l)
		e := entry{line: i + 1}
		if len(f) == cols+1 && f[cols] == "retired" {
			e.retired, f = true, f[:cols]
		}
		if len(f) == cols+2 && f[cols] == "renames" {
			e.renames, f = f[cols+1], f[:cols]
		}
		if len(f) != cols {
			t.Fatalf("%s:%d: want %d fields: %q", path, e.line, cols, l)
		}
		if e.num, err = strconv.ParseUint(f[0], 10, 32); err != nil || e.num == 0 {
			t.Fatalf("%s:%d: bad number %q", path, e.line, f[0])
		}
		e.name = f[cols-1]
		if cols == 3 {
			e.protocol = f[1]
		}
		out = append(out, e)
	}
	return out
}

// checkRegistry holds the code's numbers and names to an append-only
// registry and returns what is wrong: every live number must name in the
// code what its last line names (its first, or a later line that renames
// it), no number may be given twice, no name may be used for two numbers or
// come back after a rename, and every number in the code must be
// registered.
func checkRegistry(path string, reg []entry, code map[uint64]string) []string {
	var bad []string
	errorf := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	current, names := map[uint64]entry{}, map[string]int{}
	var order []uint64
	for _, e := range reg {
		if l, dup := names[e.name]; dup {
			errorf("%s:%d: name %s already given on line %d; names are never reused", path, e.line, e.name, l)
		}
		names[e.name] = e.line
		cur, known := current[e.num]
		switch {
		case e.renames == "" && known:
			errorf("%s:%d: number %d already given on line %d; numbers are never reused", path, e.line, e.num, cur.line)
			continue
		case e.renames != "" && !known:
			errorf("%s:%d: renames %d, which no earlier line gives", path, e.line, e.num)
			continue
		case e.renames != "" && (cur.name != e.renames || cur.protocol != e.protocol || cur.retired):
			errorf("%s:%d: renames %s %d %s, but it is %s %d %s", path, e.line, e.protocol, e.num, e.renames, cur.protocol, e.num, cur.name)
			continue
		case !known:
			order = append(order, e.num)
		}
		current[e.num] = e
	}
	for _, n := range order {
		e := current[n]
		got, inCode := code[e.num]
		switch {
		case e.retired && inCode:
			errorf("%s:%d: %d was %s, retired, and the code now uses it for %s; take a new number", path, e.line, e.num, e.name, got)
		case !e.retired && !inCode:
			errorf("%s:%d: %d %s is gone from the code; mark the line retired, never delete it", path, e.line, e.num, e.name)
		case !e.retired && got != e.name:
			errorf("%s:%d: %d is %s here but %s in the code; a number never changes meaning (a rename is a line of its own: N protocol NEW renames OLD)", path, e.line, e.num, e.name, got)
		}
	}
	for _, n := range sortedKeys(code) {
		if _, ok := current[n]; !ok {
			errorf("%s: %d %s is in the code but not registered; append it (see the file's header)", path, n, code[n])
		}
	}
	return bad
}

// schemaEnum returns the values of enum name in schema.proto by number,
// without prefix; the zero value is left out.
func schemaEnum(t *testing.T, name, prefix string) map[uint64]string {
	t.Helper()
	src := readSchema(t)
	start := strings.Index(src, "\nenum "+name+" {")
	if start < 0 {
		t.Fatalf("schema.proto: no enum %s", name)
	}
	body, _, ok := strings.Cut(src[start:], "\n}")
	if !ok {
		t.Fatalf("schema.proto: enum %s does not end", name)
	}
	value := regexp.MustCompile(`^([A-Z0-9_]+)\s*=\s*(\d+)\s*;$`)
	out := map[uint64]string{}
	for _, l := range strings.Split(body, "\n")[2:] {
		l, _, _ = strings.Cut(l, "//")
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		m := value.FindStringSubmatch(l)
		if m == nil || !strings.HasPrefix(m[1], prefix) {
			t.Fatalf("schema.proto: enum %s: cannot parse %q", name, l)
		}
		n, _ := strconv.ParseUint(m[2], 10, 32)
		if n == 0 {
			continue
		}
		if prev, dup := out[n]; dup {
			t.Fatalf("schema.proto: enum %s gives %d to %s and %s", name, n, prev, m[1])
		}
		out[n] = strings.TrimPrefix(m[1], prefix)
	}
	return out
}

func readSchema(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("schema.proto")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// upperSnake turns a Go name into a proto enum value name: GetNeighbors is
// GET_NEIGHBORS.
// upperSnake turns a Go name into protobuf's enum style: a word starts at
// an upper-case letter, except inside an acronym ("CCRequest" is
// CC_REQUEST, "PutDone" PUT_DONE).
func upperSnake(s string) string {
	var b strings.Builder
	rs := []rune(s)
	for i, r := range rs {
		if i > 0 && unicode.IsUpper(r) && (!unicode.IsUpper(rs[i-1]) || i+1 < len(rs) && unicode.IsLower(rs[i+1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToUpper(r))
	}
	return b.String()
}

func sortedKeys[V any](m map[uint64]V) []uint64 {
	var ks []uint64
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// codeTypes is every message type the code defines, by number.
func codeTypes(t *testing.T) map[uint64]string {
	t.Helper()
	out := map[uint64]string{}
	for i, ti := range types {
		if i > 0 && types[i-1].typ >= ti.typ {
			t.Errorf("types lists %s after %s: keep it in number order", ti.name, types[i-1].name)
		}
		out[uint64(ti.typ)] = ti.name
		if m := newMsg(ti.typ); m == nil || m.Type() != ti.typ {
			t.Errorf("newMsg(%d) makes %T", ti.typ, m)
		}
	}
	return out
}

func TestTypeRegistry(t *testing.T) {
	const path = "testdata/types.txt"
	reg := readRegistry(t, path, 3)
	code := codeTypes(t)
	for _, p := range checkRegistry(path, reg, code) {
		t.Error(p)
	}

	for _, e := range reg {
		r, ok := RangeOf(Type(e.num))
		if e.num > 0xffff || !ok || r.Protocol != e.protocol {
			t.Errorf("%s:%d: %d %s lies outside the range of protocol %s (%+v)", path, e.line, e.num, e.name, e.protocol, r)
		}
	}

	schema := schemaEnum(t, "Type", "TYPE_")
	src := readSchema(t)
	for _, n := range sortedKeys(code) {
		if want := upperSnake(code[n]); schema[n] != want {
			t.Errorf("schema.proto: enum Type gives %d to %q, want %q", n, schema[n], want)
		}
		if !regexp.MustCompile(`(?m)^message ` + code[n] + ` \{`).MatchString(src) {
			t.Errorf("schema.proto: no message %s", code[n])
		}
	}
	for _, n := range sortedKeys(schema) {
		if _, ok := code[n]; !ok {
			t.Errorf("schema.proto: enum Type has %d %s, which the code lacks", n, schema[n])
		}
	}
}

func TestErrCodeRegistry(t *testing.T) {
	const path = "testdata/errcodes.txt"
	code := map[uint64]string{}
	for _, c := range fault.Codes() {
		code[uint64(c)] = c.String()
	}
	for _, p := range checkRegistry(path, readRegistry(t, path, 2), code) {
		t.Error(p)
	}

	schema := schemaEnum(t, "ErrCode", "ERR_CODE_")
	for _, n := range sortedKeys(code) {
		if want := strings.ToUpper(strings.ReplaceAll(code[n], "-", "_")); schema[n] != want {
			t.Errorf("schema.proto: enum ErrCode gives %d to %q, want %q", n, schema[n], want)
		}
	}
	for _, n := range sortedKeys(schema) {
		if _, ok := code[n]; !ok {
			t.Errorf("schema.proto: enum ErrCode has %d %s, which the code lacks", n, schema[n])
		}
	}
}

func TestRanges(t *testing.T) {
	rs := Ranges()
	next := Type(1)
	for _, r := range rs {
		if r.Lo != next || r.Hi < r.Lo {
			t.Errorf("range %+v: want it to start at %d", r, next)
		}
		next = r.Hi + 1
	}
	rs[0].Protocol = "changed"
	if Ranges()[0].Protocol != "runtime" {
		t.Error("Ranges shares its table with the caller")
	}
	for _, c := range []struct {
		t    Type
		want string
	}{
		{0, ""}, {TypePing, "runtime"}, {15, "runtime"}, {TypeStabilize, "ring"}, {63, "ring"},
		{TypeStoreBlock, "dhash"}, {127, "dhash"}, {128, "maint"}, {192, "usenet"},
		{256, "cc"}, {320, "tapestry"}, {447, "d2"}, {448, ""}, {0xffff, ""},
	} {
		r, ok := RangeOf(c.t)
		if r.Protocol != c.want || ok != (c.want != "") {
			t.Errorf("RangeOf(%d) = %+v, %v; want %q", c.t, r, ok, c.want)
		}
	}
}

func TestUpperSnake(t *testing.T) {
	for in, want := range map[string]string{"Ping": "PING", "GetNeighbors": "GET_NEIGHBORS", "GetRingInfo": "GET_RING_INFO"} {
		if got := upperSnake(in); got != want {
			t.Errorf("upperSnake(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestCheckRegistry: each way of breaking the append-only rule is caught.
func TestCheckRegistry(t *testing.T) {
	reg := []entry{{line: 1, num: 1, name: "Ping"}, {line: 2, num: 2, name: "Ack"}, {line: 3, num: 3, name: "Old", retired: true}}
	code := map[uint64]string{1: "Ping", 2: "Ack"}
	if bad := checkRegistry("r", reg, code); bad != nil {
		t.Fatalf("a good registry: %v", bad)
	}
	renamed := append(slices.Clone(reg), entry{line: 4, num: 2, name: "Pong", renames: "Ack"})
	if bad := checkRegistry("r", renamed, map[uint64]string{1: "Ping", 2: "Pong"}); bad != nil {
		t.Fatalf("a rename: %v", bad)
	}
	for _, c := range []struct {
		name string
		reg  []entry
		code map[uint64]string
		want string
	}{
		{"new meaning", reg, map[uint64]string{1: "Ping", 2: "Nack"}, "never changes meaning"},
		{"not appended", reg, map[uint64]string{1: "Ping", 2: "Ack", 4: "New"}, "not registered"},
		{"deleted from code", reg, map[uint64]string{1: "Ping"}, "gone from the code"},
		{"retired reused", reg, map[uint64]string{1: "Ping", 2: "Ack", 3: "New"}, "retired"},
		{"number twice", append(slices.Clone(reg), entry{line: 4, num: 2, name: "New"}), code, "numbers are never reused"},
		{"name twice", append(slices.Clone(reg), entry{line: 4, num: 4, name: "Ping"}), map[uint64]string{1: "Ping", 2: "Ack", 4: "Ping"}, "names are never reused"},
		{"old name after a rename", renamed, code, "never changes meaning"},
		{"renamed back", append(slices.Clone(renamed), entry{line: 5, num: 2, name: "Ack", renames: "Pong"}), code, "names are never reused"},
		{"rename of another name", append(slices.Clone(reg), entry{line: 4, num: 2, name: "Pong", renames: "Ping"}), map[uint64]string{1: "Ping", 2: "Pong"}, "renames"},
		{"rename of nothing", append(slices.Clone(reg), entry{line: 4, num: 9, name: "Pong", renames: "Ack"}), code, "which no earlier line gives"},
	} {
		bad := checkRegistry("r", c.reg, c.code)
		if !slices.ContainsFunc(bad, func(s string) bool { return strings.Contains(s, c.want) }) {
			t.Errorf("%s: got %q, want a complaint containing %q", c.name, bad, c.want)
		}
	}
}
