package core

import (
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/bmatcuk/doublestar/v4"

	"orcr/core/wire"
)

// The pathological glob from issue 11: doublestar backtracks once per alternative per "**"
// position, which held the engine lock for 36 s against a deep path.
var explodingGlob = strings.Repeat("{**,a}/", 26) + "b"

func deepPath() string {
	segs := make([]string, MaxDepth)
	for i := range segs {
		segs[i] = "a"
	}
	return strings.Join(segs, "/")
}

// TestGlobExplodingPatternIsFast guards against the backtracking coming back: that
// took 36 s a match, the matcher takes microseconds (BenchmarkGlobExploding holds
// the figure). The bound is far from both so that load cannot fail it (50 ms did, at
// a load of 28: 79 ms).
func TestGlobExplodingPatternIsFast(t *testing.T) {
	g, err := ParseGlob("", explodingGlob)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{deepPath(), deepPath()[2:] + "/b", "a/b", strings.Repeat("ab/", 15) + "c"} {
		start := time.Now()
		got := g.Match(p)
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%q took %v: the match backtracks again", p, d)
		}
		want := strings.HasSuffix(p, "/b") && strings.Count(p, "/") >= 1
		if p == "a/b" {
			want = true
		}
		if got != want {
			t.Errorf("Match(%q) = %v want %v", p, got, want)
		}
	}
}

func TestGlobTooLong(t *testing.T) {
	_, err := ParseGlob("", strings.Repeat("a", MaxGlobLen+1))
	if wire.CodeOf(err) != wire.CodeInvalidGlob || !strings.Contains(err.Error(), "2048") {
		t.Fatalf("over-long glob: %v", err)
	}
}

// TestGlobAgreesWithDoublestar checks the matcher against doublestar, whose meaning it keeps, on
// many small random patterns and valid paths.
func TestGlobAgreesWithDoublestar(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	atoms := []string{"a", "b", "/", "*", "**", "?", "[ab]", "[!a]", "[a-b]", "{", "}", ",", "{a,b}", "{**,a}", "{,a/}"}
	paths := []string{"a", "b", "ab", "a/b", "b/a", "a/a/b", "ab/ba", "a/b/a/b", "aa/b", "b/b/b"}
	n := 0
	for n < 20000 {
		var sb strings.Builder
		for k := rng.Intn(7) + 1; k > 0; k-- {
			sb.WriteString(atoms[rng.Intn(len(atoms))])
		}
		pat := sb.String()
		g, err := ParseGlob("", pat)
		if err != nil || g.Literal() {
			continue
		}
		n++
		for _, p := range paths {
			want := expandedMatch(g.String(), p)
			if got := g.Match(p); got != want && !doublestarQuirk(g.String()) {
				t.Errorf("%q.Match(%q) = %v, doublestar says %v", pat, p, got, want)
			}
		}
	}
}

// expandedMatch is the meaning the matcher keeps: alternatives spliced into the pattern as
// text (so "*{*,a}" holds "**"), each expansion matched by doublestar.
func expandedMatch(pat, p string) bool {
	for _, e := range expandBraces(pat) {
		if ok, _ := doublestar.Match(e, p); ok {
			return true
		}
	}
	return false
}

// expandBraces expands the first outermost "{...}" and recurses; small patterns only.
func expandBraces(pat string) []string {
	open := -1
	for i := 0; i < len(pat); i++ {
		if pat[i] == '[' {
			i += strings.IndexByte(pat[i+1:], ']') + 1 // skip a class; a '{' in it is literal
			continue
		}
		if pat[i] == '{' {
			open = i
			break
		}
	}
	if open < 0 {
		return []string{pat}
	}
	depth, start := 0, open+1
	var alts []string
	for i := open; i < len(pat); i++ {
		switch pat[i] {
		case '[':
			i += strings.IndexByte(pat[i+1:], ']') + 1
		case '{':
			depth++
		case ',':
			if depth == 1 {
				alts = append(alts, pat[start:i])
				start = i + 1
			}
		case '}':
			if depth--; depth == 0 {
				alts = append(alts, pat[start:i])
				var out []string
				for _, a := range alts {
					out = append(out, expandBraces(pat[:open]+a+pat[i+1:])...)
				}
				return out
			}
		}
	}
	return []string{pat}
}

// doublestarQuirk reports patterns where doublestar answers differently by design of its
// backtracking rather than by the syntax's meaning: it lets a negated class match '/', and at
// the end of a name it calls only a few literal tails ("*", "**", "**/", "/**", "/**/") empty,
// so "a***" and "a*/**" miss "a" while "a**/" (a trailing '/' spliced in from braces) hits it.
func doublestarQuirk(pat string) bool {
	if strings.Contains(pat, "[!") {
		return true
	}
	for _, e := range expandBraces(pat) {
		if strings.Contains(e, "***") || strings.Contains(e, "*/**") || strings.HasSuffix(e, "/") {
			return true
		}
	}
	return false
}

func FuzzGlobAgainstDoublestar(f *testing.F) {
	for _, s := range []string{"a/**", "{**,a}/b", "*/b", "a/{b,c}/**", "[a-c]?/*"} {
		f.Add(s, "a/b")
	}
	f.Fuzz(func(t *testing.T, pat, p string) {
		if len(pat) > 40 || ValidatePath(p) != nil {
			return
		}
		g, err := ParseGlob("", pat)
		if err != nil {
			return
		}
		want := expandedMatch(g.String(), p)
		if got := g.Match(p); got != want && !doublestarQuirk(g.String()) {
			t.Fatalf("%q.Match(%q) = %v, doublestar says %v", pat, p, got, want)
		}
	})
}

func BenchmarkGlobExploding(b *testing.B) {
	g, _ := ParseGlob("", explodingGlob)
	p := deepPath()
	for b.Loop() {
		g.Match(p)
	}
}

func BenchmarkGlobTypical(b *testing.B) {
	g, _ := ParseGlob("", "review/**/tests")
	for b.Loop() {
		g.Match("review/auth/sec/tests")
	}
}

// TestGlobReversedRange: "[z-a]" is refused with the range named (the fuzzer found
// doublestar reading "[1-0]" as matching "1").
func TestGlobReversedRange(t *testing.T) {
	_, err := ParseGlob("", "a/[1-0]")
	if err == nil || !strings.Contains(err.Error(), "the range [1-0] is reversed") {
		t.Fatalf("reversed range: %v", err)
	}
	if _, err := ParseGlob("", "a/[0-1]"); err != nil {
		t.Fatal(err)
	}
}

// TestGlobLongStarRunIsCheap: the 2,040-star budget glob of the trust issue cost 0.1–1 ms a
// match, one state per star on every rune, and a budget matched it per record per event. A run
// of stars means one star, so it is compiled as one.
func TestGlobLongStarRunIsCheap(t *testing.T) {
	g, err := ParseGlob("", strings.Repeat("*", 2040))
	if err != nil {
		t.Fatal(err)
	}
	if n := len(g.prog.toks); n > 8 {
		t.Fatalf("2,040 stars compile to %d tokens; a run of stars is one star", n)
	}
	for p, want := range map[string]bool{"a": true, "review": true, "review/auth": false} {
		if got := g.Match(p); got != want {
			t.Errorf("Match(%q) = %v want %v", p, got, want)
		}
		if !g.MatchUnder(p) {
			t.Errorf("MatchUnder(%q) = false: its first segment matches", p)
		}
	}
	// The same meaning as doublestar for runs of every length around braces and slashes.
	for _, pat := range []string{"***", "****/a", "a/****", "{*,**}***/b", "***{,*}/b", "a****b", "**/****"} {
		g, err := ParseGlob("", pat)
		if err != nil {
			t.Fatal(pat, err)
		}
		for _, p := range []string{"a", "b", "a/b", "ab", "aab", "x/y/b", "a/x/b"} {
			if want := expandedMatch(g.String(), p); g.Match(p) != want && !doublestarQuirk(g.String()) {
				t.Errorf("%q.Match(%q) = %v, doublestar says %v", pat, p, !want, want)
			}
		}
	}
}

// TestGlobMatchUnder: a path or any of its ancestors, in one pass.
func TestGlobMatchUnder(t *testing.T) {
	for _, c := range []struct {
		glob, path string
		want       bool
	}{
		{"review/**", "review/auth/x", true},
		{"review", "review/auth", true},
		{"review", "reviewer/auth", false},
		{"review", "review", true},
		{"*/auth", "a/auth/b/c", true},
		{"*/auth", "a/aut/b", false},
		{"a/*", "a", false},
		{"a/*", "a/b/c", true},
		{"{x,a/b}", "a/b/c", true},
		{"[ab]/c", "b/c/d", true},
	} {
		g, err := ParseGlob("", c.glob)
		if err != nil {
			t.Fatal(err)
		}
		if got := g.MatchUnder(c.path); got != c.want {
			t.Errorf("%q.MatchUnder(%q) = %v want %v", c.glob, c.path, got, c.want)
		}
		// The same as matching the path and each ancestor.
		want := false
		for p := c.path; ; {
			if g.Match(p) {
				want = true
			}
			i := strings.LastIndexByte(p, '/')
			if i < 0 {
				break
			}
			p = p[:i]
		}
		if want != c.want {
			t.Errorf("%q: ancestors by Match say %v", c.glob, want)
		}
	}
}
