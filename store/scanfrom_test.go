package store

import (
	"context"
	"strings"
	"testing"
)

// TestScanFromSeeks: ScanFrom starts at the first key >= from and stays in its bucket
// (a bucket whose name extends it is not read), and from past every key reads nothing.
func TestScanFromSeeks(t *testing.T) {
	ctx := context.Background()
	s := openT(t, t.TempDir())
	for _, kv := range []string{"x/a", "x/b", "x/c", "x2/a"} {
		b, k, _ := strings.Cut(kv, "/")
		if err := s.Put(ctx, b, k, []byte(kv)); err != nil {
			t.Fatal(err)
		}
	}
	scan := func(from string) string {
		var got []string
		if err := s.ScanFrom(ctx, "x", from, func(k string, _ []byte) bool { got = append(got, k); return true }); err != nil {
			t.Fatal(err)
		}
		return strings.Join(got, ",")
	}
	for from, want := range map[string]string{"": "a,b,c", "b": "b,c", "bb": "c", "zz": ""} {
		if got := scan(from); got != want {
			t.Errorf("ScanFrom(x, %q) = %q, want %q", from, got, want)
		}
	}
}
