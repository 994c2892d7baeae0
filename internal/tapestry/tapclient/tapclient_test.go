package tapclient

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"triad/internal/client"
	"triad/internal/id"
	"triad/internal/wire"
)

func ref(t *testing.T, digit, addr string) wire.NodeRef {
	t.Helper()
	x, err := id.Parse(digit, id.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return wire.NodeRef{ID: x, Addr: addr}
}

// TestLocatedForms prints a locate's outcome as a table, with and without
// --all, and as JSON.
func TestLocatedForms(t *testing.T) {
	s1, s2, root, hop := ref(t, "a1", "10.0.0.1:1"), ref(t, "a2", "10.0.0.2:1"), ref(t, "b", "10.0.0.3:1"), ref(t, "c", "10.0.0.4:1")
	l := &wire.TapLocateDone{Found: true, Servers: []wire.NodeRef{s1, s2}, Root: root, Hops: 2, Path: []wire.NodeRef{hop, root}, Micros: 1500}
	for _, tc := range []struct {
		all  bool
		want string
	}{
		{false, "server   10.0.0.1:1  a1000000\nhops     2\npath     10.0.0.4:1 -> 10.0.0.3:1\nlatency  1.5ms\n"},
		{true, "server   10.0.0.1:1  a1000000\nserver   10.0.0.2:1  a2000000\nroot     10.0.0.3:1  b0000000\nhops     2\npath     10.0.0.4:1 -> 10.0.0.3:1\nlatency  1.5ms\n"},
	} {
		var b strings.Builder
		if err := WriteLocated(&b, l, tc.all); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("all=%v:\n%s\nwant:\n%s", tc.all, b.String(), tc.want)
		}
	}
	key := id.Key([]byte("x"))
	js, err := json.Marshal(LocatedJSON(key, l))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"key":"` + key.String() + `","found":true,"servers":["10.0.0.1:1","10.0.0.2:1"],"root":"10.0.0.3:1","root_id":"` + root.ID.String() + `","hops":2,"path":["10.0.0.4:1","10.0.0.3:1"],"latency_ms":1.5}`
	if string(js) != want {
		t.Errorf("JSON:\n%s\nwant:\n%s", js, want)
	}
	if js, _ := json.Marshal(LocatedJSON(key, &wire.TapLocateDone{})); !strings.Contains(string(js), `"found":false,"servers":[],"root":"","root_id":"`) {
		t.Errorf("not found: %s", js)
	}
}

// TestFetched: a fetch's bytes are returned only if they are the key's.
func TestFetched(t *testing.T) {
	data := []byte("the object")
	key := id.Key(data)
	server, root := ref(t, "a", "10.0.0.1:1"), ref(t, "b", "10.0.0.2:1")
	if got, err := fetched(key, &wire.TapLocateDone{Found: true, Servers: []wire.NodeRef{server}, Data: data}); err != nil || string(got) != string(data) {
		t.Errorf("good fetch: %q, %v", got, err)
	}
	other := id.Key([]byte("another"))
	if _, err := fetched(other, &wire.TapLocateDone{Found: true, Servers: []wire.NodeRef{server}, Data: data}); err == nil ||
		err.Error() != "10.0.0.1:1 answered 10 bytes whose key is "+key.String()+", not "+other.String() {
		t.Errorf("wrong bytes: %v", err)
	}
	if _, err := fetched(other, &wire.TapLocateDone{Found: true, Data: data}); err == nil || !strings.HasPrefix(err.Error(), "? answered") {
		t.Errorf("wrong bytes from no server: %v", err)
	}
	if _, err := fetched(key, &wire.TapLocateDone{Root: root, Hops: 3}); err == nil || err.Error() != "not found at root 10.0.0.2:1 (b0000000) after 3 hops" {
		t.Errorf("not found: %v", err)
	}
}

// TestStatusForms prints a node's status as text and as JSON.
func TestStatusForms(t *testing.T) {
	tab := &wire.TapTable{Self: ref(t, "a", "10.0.0.1:1"), Counters: []wire.Counter{{Name: "pointers", Value: 12}, {Name: "published", Value: 3}}}
	var b strings.Builder
	if err := WriteStatus(&b, tab); err != nil {
		t.Fatal(err)
	}
	want := "tapestry on 10.0.0.1:1 (" + tab.Self.ID.String() + "): joining\n  pointers   12\n  published  3\n"
	if b.String() != want {
		t.Errorf("text:\n%s\nwant:\n%s", b.String(), want)
	}
	tab.Joined = true
	js, err := json.Marshal(StatusJSON(tab))
	if err != nil {
		t.Fatal(err)
	}
	wantJSON := `{"counters":{"pointers":12,"published":3},"id":"` + tab.Self.ID.String() + `","joined":true,"self":"10.0.0.1:1"}`
	if string(js) != wantJSON {
		t.Errorf("JSON:\n%s\nwant:\n%s", js, wantJSON)
	}
}

// TestPublishNothing: an empty object is refused before anything is sent.
func TestPublishNothing(t *testing.T) {
	_, err := Publish(context.Background(), client.Target{Addr: "127.0.0.1:0"}, "empty.txt", nil, 0)
	if err == nil || err.Error() != "empty.txt is empty: there is nothing to publish" {
		t.Errorf("got %v", err)
	}
}
