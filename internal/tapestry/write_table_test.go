package tapestry_test

import (
	"encoding/json"
	"strings"
	"testing"

	"triad/internal/id"
	"triad/internal/tapestry"
	"triad/internal/wire"
)

func TestWriteTable(t *testing.T) {
	ref := func(addr string, b byte) wire.NodeRef {
		raw := make([]byte, id.Bytes)
		raw[0] = b
		x, _ := id.FromBytes(raw)
		return wire.NodeRef{ID: x, Addr: addr}
	}
	tb := &wire.TapTable{Self: ref("a:1", 0x10), Joined: true,
		Entries:      []wire.TapEntry{{Level: 0, Digit: 2, Links: []wire.NodeRef{ref("b:1", 0x20), ref("c:1", 0x21)}, RTTMicros: []uint64{1500}}},
		Backpointers: []wire.NodeRef{ref("d:1", 0x30)}}
	var b strings.Builder
	if err := tapestry.WriteTable(&b, tb); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tapestry table of a:1", "b:1 (1.50 ms)", "c:1 (0.00 ms)", "backpointers (1):", "d:1"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	j, err := json.Marshal(tapestry.TableJSON(tb))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"self":"a:1"`, `"rtt_ms":1.5`, `"backup":true`, `"backpointers":["d:1"]`} {
		if !strings.Contains(string(j), want) {
			t.Errorf("JSON lacks %s: %s", want, j)
		}
	}
}
