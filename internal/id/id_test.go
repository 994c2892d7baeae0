package id

import (
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"
)

func mustParse(t *testing.T, s string, w int) ID {
	t.Helper()
	x, err := Parse(s, w)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

func TestIntervals(t *testing.T) {
	for _, tc := range []struct {
		x, a, b     string
		between, in bool
	}{
		{"15", "10", "20", true, true},
		{"10", "10", "20", false, false},
		{"20", "10", "20", false, true},
		{"05", "20", "10", true, true},   // wraps past zero
		{"f0", "20", "10", true, true},   // wraps past zero
		{"15", "20", "10", false, false}, // outside the wrapped arc
		{"10", "20", "10", false, true},
		{"33", "33", "33", false, true}, // (a, a] is the whole circle
		{"34", "33", "33", true, true},
	} {
		x, lo, hi := mustParse(t, tc.x, 1), mustParse(t, tc.a, 1), mustParse(t, tc.b, 1)
		if got := x.Between(lo, hi); got != tc.between {
			t.Errorf("%s in (%s,%s) = %v, want %v", tc.x, tc.a, tc.b, got, tc.between)
		}
		if got := x.In(lo, hi); got != tc.in {
			t.Errorf("%s in (%s,%s] = %v, want %v", tc.x, tc.a, tc.b, got, tc.in)
		}
	}
}

// TestArithmeticAgainstBig checks Add, Sub and AddPow2 against math/big for
// both the ring width and D2's 512-bit width.
func TestArithmeticAgainstBig(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, w := range []int{Bytes, 64} {
		mod := new(big.Int).Lsh(big.NewInt(1), uint(8*w))
		toBig := func(x ID) *big.Int { return new(big.Int).SetBytes(x.Bytes()) }
		for n := 0; n < 500; n++ {
			x, y := Random(r, w), Random(r, w)
			sum := new(big.Int).Add(toBig(x), toBig(y))
			sum.Mod(sum, mod)
			if toBig(x.Add(y)).Cmp(sum) != 0 {
				t.Fatalf("add %s + %s", x, y)
			}
			diff := new(big.Int).Sub(toBig(x), toBig(y))
			diff.Mod(diff, mod)
			if toBig(x.Sub(y)).Cmp(diff) != 0 {
				t.Fatalf("sub %s - %s", x, y)
			}
			if x.Distance(y) != y.Sub(x) {
				t.Fatal("distance is not y-x")
			}
			i := r.IntN(8 * w)
			p := new(big.Int).Add(toBig(x), new(big.Int).Lsh(big.NewInt(1), uint(i)))
			p.Mod(p, mod)
			if toBig(x.AddPow2(i)).Cmp(p) != 0 {
				t.Fatalf("addpow2 %s + 2^%d", x, i)
			}
			// Membership agrees with distances: x in (a, b] iff 0 < d(a,x) <= d(a,b).
			a := Random(r, w)
			dx, db := toBig(a.Distance(x)), toBig(a.Distance(y))
			want := dx.Sign() > 0 && (dx.Cmp(db) <= 0 || db.Sign() == 0)
			if x.In(a, y) != want {
				t.Fatalf("%s in (%s,%s] = %v", x, a, y, !want)
			}
		}
	}
}

func TestKeyAndParse(t *testing.T) {
	k := Key([]byte("hello"))
	if k.Width() != Bytes {
		t.Fatalf("key width %d", k.Width())
	}
	// SHA-256("hello") starts 2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c.
	if k.String() != "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c" {
		t.Fatalf("key %s", k)
	}
	if _, err := Parse("zz", Bytes); err == nil {
		t.Fatal("parsed non-hex")
	}
	if _, err := Parse(k.String()+"00", Bytes); err == nil {
		t.Fatal("parsed too long")
	}
	if half := mustParse(t, "8", Bytes); half.Float() != 0.5 {
		t.Fatalf("8 -> %v", half.Float())
	}
	if _, err := FromBytes(nil); err == nil {
		t.Fatal("empty id accepted")
	}
}

func TestWidthMismatchPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	mustParse(t, "1", 1).Cmp(mustParse(t, "1", 2))
}

func TestDigits(t *testing.T) {
	x, _ := Parse("4a7f"+strings.Repeat("0", 36), Bytes)
	y, _ := Parse("4a3f"+strings.Repeat("0", 36), Bytes)
	for i, want := range []int{4, 10, 7, 15, 0} {
		if got := x.Digit(i, 4); got != want {
			t.Errorf("hex digit %d = %d, want %d", i, got, want)
		}
	}
	// 0x4a = 01 00 10 10 in base 4.
	for i, want := range []int{1, 0, 2, 2} {
		if got := x.Digit(i, 2); got != want {
			t.Errorf("base-4 digit %d = %d, want %d", i, got, want)
		}
	}
	// 0x7 = 0111 and 0x3 = 0011 differ in the second bit of digit 2.
	if got := x.SharedDigits(y, 4); got != 2 {
		t.Errorf("shared hex digits = %d, want 2", got)
	}
	if got := x.SharedDigits(y, 2); got != 4 {
		t.Errorf("shared base-4 digits = %d, want 4", got)
	}
	if got := x.SharedDigits(x, 4); got != 40 {
		t.Errorf("an ID shares %d digits with itself, want 40", got)
	}
}
