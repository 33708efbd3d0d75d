package natural

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestComparePaths(t *testing.T) {
	got := []string{"x9", "x/a10/b", "x/a10", "x/a2", "x/a02", "w/z", "x/b", "x/a1"}
	slices.SortFunc(got, ComparePaths)
	want := []string{"w/z", "x/a1", "x/a02", "x/a2", "x/a10", "x/a10/b", "x/b", "x9"}
	if !slices.Equal(got, want) {
		t.Fatalf("sorted %q, want %q", got, want)
	}
}

func TestCompareOrder(t *testing.T) {
	want := []string{"a", "a1", "a2", "a10", "a10b", "a11", "b", "item-2", "item-10", "item10", "w", "w01", "w1", "w02", "w2", "w3x", "w10", "w100"}
	got := slices.Clone(want)
	rand.Shuffle(len(got), func(i, j int) { got[i], got[j] = got[j], got[i] })
	slices.SortFunc(got, Compare)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("natural order\n got %v\nwant %v", got, want)
	}
}

// FuzzCompare checks that Compare is an order: antisymmetric, zero only
// for equal strings, and transitive over the three inputs.
func FuzzCompare(f *testing.F) {
	f.Add("w2", "w10", "w02")
	f.Add("a0", "a00", "a")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		ab, ba := Compare(a, b), Compare(b, a)
		if ab != -ba || (ab == 0) != (a == b) {
			t.Fatalf("compare(%q,%q)=%d, reverse %d", a, b, ab, ba)
		}
		if ab <= 0 && Compare(b, c) <= 0 && Compare(a, c) > 0 {
			t.Fatalf("not transitive: %q <= %q <= %q but %q > %q", a, b, c, a, c)
		}
	})
}
