package core

import (
	"strings"
	"testing"

	"orcr/core/wire"
)

func TestValidatePath(t *testing.T) {
	good := []string{"a", "review/auth/security", "a1/b.c/d_e-f", strings.Repeat("a/", 15) + "a", strings.Repeat("x", 64)}
	for _, p := range good {
		if err := ValidatePath(p); err != nil {
			t.Errorf("ValidatePath(%q) = %v, want nil", p, err)
		}
	}
	bad := []string{"", "/a", "a/", "a//b", "..", "a/../b", "A", "a/B", "-a", ".a", "a b", strings.Repeat("a/", 16) + "a", strings.Repeat("x", 65), "a/é"}
	for _, p := range bad {
		err := ValidatePath(p)
		if err == nil || wire.CodeOf(err) != wire.CodeInvalidPath {
			t.Errorf("ValidatePath(%q) = %v, want invalid_path", p, err)
		}
	}
}

func TestResolvePath(t *testing.T) {
	cases := []struct{ scope, in, want string }{
		{"", "a/b", "a/b"},
		{"demo/child", "grandchild", "demo/child/grandchild"},
		{"demo/child", "/top", "top"},
	}
	for _, c := range cases {
		got, err := ResolvePath(c.scope, c.in)
		if err != nil || got != c.want {
			t.Errorf("ResolvePath(%q,%q) = %q,%v want %q", c.scope, c.in, got, err, c.want)
		}
	}
	if _, err := ResolvePath("a", "../b"); err == nil {
		t.Error("upward path accepted")
	}
}

func TestGlob(t *testing.T) {
	cases := []struct {
		glob, path string
		want       bool
	}{
		{"review/*", "review/auth", true},
		{"review/*", "review/auth/sec", false},
		{"review/**", "review/auth/sec", true},
		{"review/**", "review", true},
		{"*/tests", "a/tests", true},
		{"*/tests", "a/b/tests", false},
		{"demo/hello", "demo/hello", true},
		{"demo/hello", "demo/hello2", false},
	}
	for _, c := range cases {
		g, err := ParseGlob("", c.glob)
		if err != nil {
			t.Fatalf("ParseGlob(%q): %v", c.glob, err)
		}
		if got := g.Match(c.path); got != c.want {
			t.Errorf("%q.Match(%q) = %v want %v", c.glob, c.path, got, c.want)
		}
	}
	for _, bad := range []string{"", "a/[", "a//b", "../x", "A/B"} {
		if _, err := ParseGlob("", bad); wire.CodeOf(err) != wire.CodeInvalidGlob {
			t.Errorf("ParseGlob(%q) = %v, want invalid_glob", bad, err)
		}
	}
	g, _ := ParseGlob("demo", "*")
	if !g.Match("demo/x") || g.Match("x") {
		t.Error("relative glob not scoped")
	}
}

func FuzzPathAndGlob(f *testing.F) {
	for _, s := range []string{"a/b", "review/**", "*/tests", "a//b", "..", "[", "a/{b,c}", "/x/y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if err := ValidatePath(s); err == nil {
			// A valid path resolves to itself and matches itself as a glob.
			if got, err := ResolvePath("", s); err != nil || got != s {
				t.Fatalf("valid path %q resolved to %q, %v", s, got, err)
			}
			g, err := ParseGlob("", s)
			if err != nil || !g.Match(s) {
				t.Fatalf("valid path %q not its own glob: %v", s, err)
			}
		} else if wire.CodeOf(err) != wire.CodeInvalidPath {
			t.Fatalf("wrong code for %q: %v", s, err)
		}
		if g, err := ParseGlob("", s); err == nil {
			_ = g.Match("a/b/c")
		} else if wire.CodeOf(err) != wire.CodeInvalidGlob {
			t.Fatalf("wrong glob code for %q: %v", s, err)
		}
	})
}
