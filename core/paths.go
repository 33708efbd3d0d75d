package core

import (
	"fmt"
	"strings"

	"github.com/bmatcuk/doublestar/v4"

	"orcr/core/wire"
)

// MaxDepth is the deepest an agent path may be.
const MaxDepth = 16

// ValidatePath checks an absolute agent path (no leading slash): segments match
// [a-z0-9][a-z0-9._-]{0,63}, at most MaxDepth of them.
func ValidatePath(p string) error {
	if p == "" {
		return pathErr(p, "a path is required, e.g. review/auth")
	}
	segs := strings.Split(p, "/")
	if len(segs) > MaxDepth {
		return pathErr(p, fmt.Sprintf("it is %d levels deep; the limit is %d", len(segs), MaxDepth))
	}
	for _, s := range segs {
		if err := validSegment(s); err != "" {
			return pathErr(p, err)
		}
	}
	return nil
}

func validSegment(s string) string {
	switch {
	case s == "":
		return "it has an empty segment (check for '//' or a trailing '/')"
	case s == "." || s == "..":
		return "'.' and '..' are not allowed; paths are absolute or relative to the caller, never upward"
	case len(s) > 64:
		return fmt.Sprintf("segment %.20q… is %d characters; the limit is 64", s, len(s))
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if i > 0 {
			ok = ok || c == '.' || c == '_' || c == '-'
		}
		if !ok {
			if c >= 'A' && c <= 'Z' {
				return fmt.Sprintf("segment %q has uppercase; use lowercase letters, digits, '.', '_' and '-'", s)
			}
			return fmt.Sprintf("segment %q must start with [a-z0-9] and hold only [a-z0-9._-]", s)
		}
	}
	return ""
}

func pathErr(p, why string) error {
	return &wire.Error{Code: wire.CodeInvalidPath, Message: fmt.Sprintf("invalid path %q: %s", p, why)}
}

// ResolvePath turns a user path into an absolute one. A leading "/" makes it absolute;
// otherwise it is relative to scope (the caller agent's path, "" for none).
func ResolvePath(scope, p string) (string, error) {
	var abs string
	switch {
	case strings.HasPrefix(p, "/"):
		abs = strings.TrimPrefix(p, "/")
	case scope != "":
		abs = scope + "/" + p
	default:
		abs = p
	}
	if err := ValidatePath(abs); err != nil {
		return "", err
	}
	return abs, nil
}

// Glob is a compiled agent selector: "*" matches one segment, "**" any number.
// A glob without wildcards matches exactly that path.
type Glob struct {
	pattern string
	literal bool
	prog    *globProg
}

// MaxGlobLen bounds a glob's length after scoping. The matcher is linear in it, so the bound only
// keeps one match's work and memory small; the longest valid path (16 segments of 64) fits.
const MaxGlobLen = 2048

// ParseGlob checks a glob, resolving it against scope like a path.
func ParseGlob(scope, g string) (Glob, error) {
	if g == "" {
		return Glob{}, &wire.Error{Code: wire.CodeInvalidGlob, Message: "a glob is required, e.g. 'review/**'"}
	}
	abs := g
	if strings.HasPrefix(g, "/") {
		abs = strings.TrimPrefix(g, "/")
	} else if scope != "" {
		abs = scope + "/" + g
	}
	if len(abs) > MaxGlobLen {
		return Glob{}, &wire.Error{Code: wire.CodeInvalidGlob,
			Message: fmt.Sprintf("invalid glob %.40q…: it is %d bytes; the limit is %d", g, len(abs), MaxGlobLen)}
	}
	if !doublestar.ValidatePattern(abs) || strings.Contains(abs, "\\") {
		return Glob{}, &wire.Error{Code: wire.CodeInvalidGlob,
			Message: fmt.Sprintf("invalid glob %q: use '*' for one segment and '**' for any depth, e.g. 'review/**'", g)}
	}
	for _, s := range strings.Split(abs, "/") {
		if s == "" || s == "." || s == ".." {
			return Glob{}, &wire.Error{Code: wire.CodeInvalidGlob,
				Message: fmt.Sprintf("invalid glob %q: empty, '.' or '..' segment", g)}
		}
	}
	lit := !strings.ContainsAny(abs, "*?[{")
	if lit {
		if err := ValidatePath(abs); err != nil {
			return Glob{}, &wire.Error{Code: wire.CodeInvalidGlob, Message: err.Error()}
		}
	}
	g2 := Glob{pattern: abs, literal: lit}
	if !lit {
		g2.prog = compileGlob(abs)
		if r := g2.prog.reversed; r != "" {
			return Glob{}, &wire.Error{Code: wire.CodeInvalidGlob,
				Message: fmt.Sprintf("invalid glob %q: the range [%s] is reversed; write it low to high", g, r)}
		}
	}
	return g2, nil
}

// Match reports whether path p is selected. A glob "a/**" also selects "a" itself.
func (g Glob) Match(p string) bool {
	if g.literal {
		return p == g.pattern
	}
	return g.prog.match(p)
}

// MatchUnder reports whether path p or one of its ancestors is selected: what a rule on a
// subtree asks (a budget counts an agent under any agent it selects). It costs one match.
func (g Glob) MatchUnder(p string) bool {
	if g.literal {
		return p == g.pattern || strings.HasPrefix(p, g.pattern) && len(p) > len(g.pattern) && p[len(g.pattern)] == '/'
	}
	return g.prog.matchUnder(p)
}

// Literal reports whether the glob has no wildcards.
func (g Glob) Literal() bool { return g.literal }

// String returns the absolute pattern.
func (g Glob) String() string { return g.pattern }
