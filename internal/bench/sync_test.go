package bench

import "testing"

// Between two real stores that agree on a range, a synchronization sends
// no key list: one query when they are equal, a few along the range's
// ends when the neighbour holds more past it; and a key only the
// neighbour has is found.
func TestSyncCostOfEqualStores(t *testing.T) {
	res, err := Sync(SyncConfig{Dir: t.TempDir(), Keys: 20_000, Outside: 5_000})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cases) != 3 {
		t.Fatalf("%d cases, want 3: %+v", len(res.Cases), res.Cases)
	}
	equal, outside, one := res.Cases[0], res.Cases[1], res.Cases[2]
	if equal.Queries != 1 || equal.Missing != 0 {
		t.Errorf("equal stores: %+v, want 1 query and nothing missing", equal)
	}
	if outside.Queries > 32 || outside.Missing != 0 || outside.Bytes > 64<<10 {
		t.Errorf("neighbour with keys past the range: %+v, want a few queries and nothing missing", outside)
	}
	if one.Missing != 1 {
		t.Errorf("one key only on the neighbour: %+v, want it found", one)
	}
	t.Logf("%+v", res.Cases)
}
