// Package gitref checks names against git's rules for branch names (git-check-ref-format(1)
// with --branch), without running git, so a plan name or a --worktree branch git cannot
// use is refused when it is given, with the rule it breaks, instead of when a run starts
// with git's own message.
package gitref

import (
	"fmt"
	"strings"
)

// CheckBranch returns nil when git accepts name as a branch name (refs/heads/NAME), else
// an error saying which rule it breaks. It is as strict as `git check-ref-format --branch`
// and stricter in one place: "@" alone, which git reads as HEAD.
func CheckBranch(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("it is empty")
	case name == "HEAD" || name == "@":
		return fmt.Errorf("%q means the current commit to git", name)
	case strings.HasPrefix(name, "-"):
		return fmt.Errorf("it starts with '-'")
	case strings.HasSuffix(name, "."):
		return fmt.Errorf("it ends with '.'")
	case strings.Contains(name, ".."):
		return fmt.Errorf("it contains \"..\"")
	case strings.Contains(name, "@{"):
		return fmt.Errorf("it contains \"@{\"")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c < 0x20 || c == 0x7f:
			return fmt.Errorf("it contains a control character")
		case strings.IndexByte(" ~^:?*[\\", c) >= 0:
			return fmt.Errorf("it contains %q", string(c))
		}
	}
	for _, comp := range strings.Split(name, "/") {
		switch {
		case comp == "":
			return fmt.Errorf("it has an empty part between slashes (or starts or ends with '/')")
		case strings.HasPrefix(comp, "."):
			return fmt.Errorf("a part starts with '.' (%q)", comp)
		case strings.HasSuffix(comp, ".lock"):
			return fmt.Errorf("a part ends with \".lock\" (%q)", comp)
		}
	}
	return nil
}

// Suggest is name with what CheckBranch refuses replaced by '-', for an error's "e.g.".
// It may still be refused (e.g. an empty name); callers print it only when it is not.
func Suggest(name string) string {
	var b strings.Builder
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte(" ~^:?*[\\@{", c) >= 0 {
			c = '-'
		}
		b.WriteByte(c)
	}
	s := b.String()
	for strings.Contains(s, "..") {
		s = strings.ReplaceAll(s, "..", ".")
	}
	for strings.Contains(s, "//") {
		s = strings.ReplaceAll(s, "//", "/")
	}
	parts := strings.Split(strings.Trim(s, "/"), "/")
	for i, p := range parts {
		p = strings.TrimLeft(strings.TrimSuffix(p, ".lock"), ".")
		parts[i] = p
	}
	s = strings.TrimLeft(strings.TrimRight(strings.Join(parts, "/"), "."), "-")
	return s
}
