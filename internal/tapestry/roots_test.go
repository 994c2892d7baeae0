package tapestry

import (
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"triad/internal/id"
	"triad/internal/wire"
)

// TestRootsFileRoundTrip: root pointers saved are read back as they were,
// and a damaged line is refused with its number, not half-read.
func TestRootsFileRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(29, 9))
	var l []RootPointer
	for i := range 5 {
		l = append(l, RootPointer{Key: id.Random(r, id.Bytes), App: uint32(i), Level: uint32(i * 3),
			Server:  wire.NodeRef{ID: id.Random(r, id.Bytes), Addr: "127.0.0.1:400" + string(rune('0'+i)), Machine: r.Uint64()},
			Expires: time.Unix(1_800_000_000+int64(i), 5).UTC()})
	}
	got, err := decodeRoots(encodeRoots(l))
	if err != nil || !reflect.DeepEqual(got, l) {
		t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, got, l)
	}
	for _, bad := range []string{
		"nothex 1 2 3 4 5 6",
		strings.Repeat("a", 40) + " " + strings.Repeat("b", 40) + " h1 0 1 80 99", // level past any table
		strings.Repeat("a", 40) + " " + strings.Repeat("b", 40) + " h1 0 1 2",     // a field short
	} {
		if _, err := decodeRoots([]byte("# header\n" + bad + "\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q: %v, want an error naming line 2", bad, err)
		}
	}
}
