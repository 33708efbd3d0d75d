package github

import (
	"strconv"
	"strings"
	"testing"
)

func TestNextPageReadsLinksNextOnly(t *testing.T) {
	for _, c := range []struct {
		link string
		want int
	}{
		{``, 0},
		{`<https://api.github.com/repositories/1/issues?page=3&per_page=100>; rel="next", <https://api.github.com/repositories/1/issues?page=9&per_page=100>; rel="last"`, 3},
		{`<https://api.github.com/x?page=1>; rel="prev", <https://api.github.com/x?page=1>; rel="first"`, 0},
		{`<https://h/x?per_page=100&page=12>;rel="next"`, 12},
		{`<https://h/x?page=2>; rel="last"; title="x", <https://h/x?page=5>; title="y"; rel="next"`, 5},
		{`https://h/x?page=2; rel="next"`, 0},      // no angle brackets
		{`<https://h/x?page=zero>; rel="next"`, 0}, // no page number
		{`<https://h/x?page=-4>; rel="next"`, 0},
		{`<:bad url?page=2>; rel="next"`, 0},
	} {
		if got := nextPage(c.link); got != c.want {
			t.Errorf("nextPage(%q) = %d, want %d", c.link, got, c.want)
		}
	}
}

func FuzzNextPage(f *testing.F) {
	f.Add(`<https://api.github.com/x?page=3&per_page=100>; rel="next", <https://api.github.com/x?page=9>; rel="last"`)
	f.Add(`<>; rel="next"`)
	f.Add(`,,;;<`)
	f.Fuzz(func(t *testing.T, link string) {
		n := nextPage(link)
		if n < 0 {
			t.Fatalf("nextPage(%q) = %d", link, n)
		}
		if n > 0 && !strings.Contains(link, strconv.Itoa(n)) && !strings.Contains(link, "%") && !strings.Contains(link, "+") {
			t.Fatalf("nextPage(%q) = %d, a page the header does not name", link, n)
		}
	})
}
