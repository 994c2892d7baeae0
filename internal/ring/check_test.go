package ring_test

import (
	"fmt"
	"slices"
	"testing"

	"triad/internal/id"
	"triad/internal/ring"
	"triad/internal/wire"
)

func TestCheck(t *testing.T) {
	// r is a ring of six vnodes in ring order, two to a host.
	var r []wire.NodeRef
	for i := range 6 {
		x, err := id.Parse(fmt.Sprintf("%x", 2*i+1), id.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		r = append(r, wire.NodeRef{ID: x, Addr: fmt.Sprintf("h%d", i%3)})
	}
	stranger := wire.NodeRef{ID: r[2].ID.AddPow2(3), Addr: "h9"}
	// right is every vnode's view with lists of succs and preds entries.
	right := func(succs, preds int) []wire.VnodeInfo {
		var views []wire.VnodeInfo
		for i := range r {
			v := wire.VnodeInfo{Self: r[i]}
			for j := 1; j <= min(succs, len(r)-1); j++ {
				v.Succs = append(v.Succs, r[(i+j)%len(r)])
			}
			for j := 1; j <= min(preds, len(r)-1); j++ {
				v.Preds = append(v.Preds, r[(i-j+len(r))%len(r)])
			}
			views = append(views, v)
		}
		return views
	}
	// with replaces vnode i's lists.
	with := func(views []wire.VnodeInfo, i int, succs, preds []wire.NodeRef) []wire.VnodeInfo {
		views = slices.Clone(views)
		views[i].Succs, views[i].Preds = succs, preds
		return views
	}
	full := right(16, 16)
	// wrong names the wrong lists: vnode index and list.
	type wrong struct {
		vnode int
		list  string
	}
	for _, tc := range []struct {
		name  string
		views []wire.VnodeInfo
		want  ring.Want
		wrong []wrong
	}{
		{"complete", full, ring.Want{Succs: 16, Preds: 16}, nil},
		{"lists shorter than the ring", right(2, 3), ring.Want{Succs: 2, Preds: 3}, nil},
		{"alone", []wire.VnodeInfo{{Self: r[0]}}, ring.Want{Succs: 16, Preds: 16}, nil},
		{"alone, listing a vnode gone", []wire.VnodeInfo{{Self: r[0], Succs: r[1:2]}}, ring.Want{Succs: 16}, []wrong{{0, "succs"}}},
		{"none", nil, ring.Want{Succs: 16, Preds: 16}, nil},
		{"gap after a right successor", with(full, 0, []wire.NodeRef{r[1], r[4], r[5]}, full[0].Preds), ring.Want{Succs: 16, Preds: 16}, []wrong{{0, "succs"}}},
		{"successor skips one", with(full, 2, []wire.NodeRef{r[4], r[5], r[0], r[1]}, full[2].Preds), ring.Want{Succs: 1}, []wrong{{2, "succs"}}},
		{"stranger", with(right(2, 2), 1, []wire.NodeRef{r[2], stranger}, []wire.NodeRef{r[0], r[5]}), ring.Want{Succs: 2, Preds: 2}, []wrong{{1, "succs"}}},
		{"stranger past all the others", with(full, 3, append(slices.Clone(full[3].Succs), stranger), full[3].Preds), ring.Want{Succs: 16}, []wrong{{3, "succs"}}},
		{"lists itself", with(full, 3, append(slices.Clone(full[3].Succs), r[3]), full[3].Preds), ring.Want{Succs: 16}, []wrong{{3, "succs"}}},
		{"shortfall", with(full, 5, []wire.NodeRef{r[0], r[1]}, full[5].Preds), ring.Want{Succs: 16, Preds: 16}, []wrong{{5, "succs"}}},
		{"no successor", with(full, 5, nil, full[5].Preds), ring.Want{Succs: 1, Preds: 1}, []wrong{{5, "succs"}}},
		{"wrong predecessor", with(full, 4, full[4].Succs, []wire.NodeRef{r[2], r[3]}), ring.Want{Succs: 16, Preds: 1}, []wrong{{4, "preds"}}},
		{"wrong address", with(full, 4, full[4].Succs, []wire.NodeRef{{ID: r[3].ID, Addr: "h9"}}), ring.Want{Preds: 1}, []wrong{{4, "preds"}}},
		{"both lists of two vnodes", with(with(full, 1, nil, nil), 2, full[2].Succs[:3], full[2].Preds), ring.Want{Succs: 16, Preds: 16}, []wrong{{1, "succs"}, {1, "preds"}, {2, "succs"}}},
		// Pointers only: the rest of each list is not looked at.
		{"pointers right, rest stale", with(full, 0, []wire.NodeRef{r[1], stranger}, []wire.NodeRef{r[5], stranger}), ring.Want{Succs: 1, Preds: 1}, nil},
		{"predecessors unchecked", with(full, 0, full[0].Succs, nil), ring.Want{Succs: 16}, nil},
		{"nothing checked", with(full, 0, nil, nil), ring.Want{}, nil},
	} {
		var got []wrong
		for _, p := range ring.Check(tc.views, tc.want) {
			i := slices.IndexFunc(r, func(n wire.NodeRef) bool { return n == p.Self })
			got = append(got, wrong{i, p.List})
		}
		if !slices.Equal(got, tc.wrong) {
			t.Errorf("%s: wrong lists %v, want %v", tc.name, got, tc.wrong)
		}
	}
}

// TestCheckProblem checks what a problem says: the whole list and what it
// should be.
func TestCheckProblem(t *testing.T) {
	var r []wire.NodeRef
	for _, s := range []string{"10", "40", "80"} {
		x, _ := id.Parse(s, id.Bytes)
		r = append(r, wire.NodeRef{ID: x, Addr: "h" + s})
	}
	views := []wire.VnodeInfo{
		{Self: r[0], Succs: []wire.NodeRef{r[1], r[2]}, Preds: []wire.NodeRef{r[2], r[1]}},
		{Self: r[1], Succs: []wire.NodeRef{r[2], r[0]}, Preds: []wire.NodeRef{r[0], r[2]}},
		{Self: r[2], Succs: []wire.NodeRef{r[0], r[1]}, Preds: []wire.NodeRef{r[1]}},
	}
	got := ring.Check(views, ring.Want{Succs: 16, Preds: 16})
	want := []ring.Problem{{Self: r[2], List: "preds", Got: []wire.NodeRef{r[1]}, Want: []wire.NodeRef{r[1], r[0]}}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	if s, w := got[0].String(), "80000000@h80: preds=[40000000@h40], want [40000000@h40 10000000@h10]"; s != w {
		t.Errorf("String() = %q, want %q", s, w)
	}
}
