package key

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestNameRecordVerifies: a record SignName makes parses back to its name,
// volume and key; a record with any field changed, a name past the bound
// or one another key signed for this volume does not.
func TestNameRecordVerifies(t *testing.T) {
	pub, priv := testKeyPair(t, 1)
	_, other := testKeyPair(t, 2)
	rec, err := SignName("home", priv)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseName(rec)
	if err != nil || got.Name != "home" || got.Volume != VolumeOfKey(pub) || !bytes.Equal(got.Pub, pub) {
		t.Fatalf("ParseName: %+v, %v", got, err)
	}
	lines := strings.SplitAfter(string(rec), "\n") // magic, name, volume, pub, sig, ""
	otherRec, err := SignName("home", other)
	if err != nil {
		t.Fatal(err)
	}
	otherLines := strings.SplitAfter(string(otherRec), "\n")
	bad := map[string]string{
		"renamed":             lines[0] + "work\n" + strings.Join(lines[2:], ""),
		"another volume":      strings.Join(lines[:2], "") + otherLines[2] + strings.Join(lines[3:], ""),
		"another key":         strings.Join(lines[:3], "") + otherLines[3] + lines[4],
		"another signature":   strings.Join(lines[:4], "") + otherLines[4],
		"no newline at end":   strings.TrimSuffix(string(rec), "\n"),
		"a line more":         string(rec) + "x\n",
		"legacy magic":        "triad-fs-volume 2\n" + strings.Join(lines[1:], ""),
		"not hex":             strings.Join(lines[:4], "") + strings.Repeat("z", 128) + "\n",
		"name with a slash":   lines[0] + "a/b\n" + strings.Join(lines[2:], ""),
		"empty":               "",
		"name past the bound": lines[0] + strings.Repeat("n", MaxNameBytes+1) + "\n" + strings.Join(lines[2:], ""),
	}
	for name, b := range bad {
		if _, err := ParseName([]byte(b)); !errors.Is(err, ErrBadName) {
			t.Errorf("%s: %v, want ErrBadName", name, err)
		}
	}
	for _, name := range []string{"", "a:b", "a/b", "a\nb", strings.Repeat("n", MaxNameBytes+1)} {
		if _, err := SignName(name, priv); !errors.Is(err, ErrBadName) {
			t.Errorf("SignName(%q): %v, want ErrBadName", name, err)
		}
	}
	long := strings.Repeat("n", MaxNameBytes)
	if rec, err := SignName(long, priv); err != nil {
		t.Fatal(err)
	} else if _, err := ParseName(rec); err != nil {
		t.Fatalf("a name of %d bytes: %v", MaxNameBytes, err)
	}
}

// FuzzParseName: ParseName never panics, and what it accepts is a record
// whose volume is its key's and whose name is a volume name.
func FuzzParseName(f *testing.F) {
	_, priv := testKeyPair(f, 3)
	rec, err := SignName("home", priv)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(rec)
	f.Add([]byte(nameMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseName(b)
		if err != nil {
			return
		}
		if VolumeOfKey(r.Pub) != r.Volume || CheckName(r.Name) != nil || len(b) > maxNameRecord {
			t.Fatalf("accepted %q as %+v", b, r)
		}
	})
}
