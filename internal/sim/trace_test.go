package sim

import (
	"strings"
	"testing"
	"time"
)

func TestParseTrace(t *testing.T) {
	tr, err := ParseTrace(strings.NewReader(`
# a comment
0.5 crash 3
1 crash-wipe 4
2 restart 3
2 partition 0-2,5 3-4
3.25 heal
4 join
5 leave 1
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(tr) != 7 {
		t.Fatalf("%d events", len(tr))
	}
	if tr[0].At != 500*time.Millisecond || tr[0].Action != ActCrash || tr[0].Host != 3 {
		t.Errorf("first event %+v", tr[0])
	}
	if g := tr[3].Groups; len(g) != 2 || len(g[0]) != 4 || g[0][3] != 5 || len(g[1]) != 2 {
		t.Errorf("partition groups %v", g)
	}
	for _, bad := range []string{
		"x crash 1", "1 explode 2", "1 crash", "1 crash -1", "2 heal\n1 heal",
		"1 partition 5-2", "1 join 3", "NaN crash 1", "1 crash 99999999",
	} {
		if _, err := ParseTrace(strings.NewReader(bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}
