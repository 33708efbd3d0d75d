package natural

import (
	"slices"
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
