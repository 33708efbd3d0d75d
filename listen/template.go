package listen

import (
	"fmt"
	"slices"
	"strings"
)

// Template is an action field with {{var}} placeholders over an event's vars. It is
// parsed once at load; a placeholder naming a variable the source never sets is refused
// there, not discovered at the first dispatch.
type Template struct {
	Text  string
	parts []tmplPart
}

type tmplPart struct {
	lit string
	v   string // a variable name; "" for a literal
}

// Variables every source sets on its events.
var commonVars = []string{"id", "listener", "source"}

// sourceVars are the variables each source type sets. The shell source's JSON objects
// may carry any keys, so its set is open (nil): templates are checked at dispatch.
var sourceVars = map[string][]string{
	"shell":             nil,
	"github-issues":     {"repo", "number", "title", "body", "url", "user", "labels", "state"},
	"github-comments":   {"repo", "number", "title", "body", "url", "user", "comment_id", "issue_body", "issue_url"},
	"github-labels":     {"repo", "number", "title", "body", "url", "user", "label", "labels"},
	"github-pr-reviews": {"repo", "number", "title", "body", "url", "user", "state", "review_id", "head", "base", "pr_body"},
}

// SourceTypes are the source types a listener may name.
func SourceTypes() []string {
	out := make([]string, 0, len(sourceVars))
	for k := range sourceVars {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// VarsFor returns the variables a source type sets, and false when the set is open.
func VarsFor(sourceType string) ([]string, bool) {
	vs, ok := sourceVars[sourceType]
	if !ok || vs == nil {
		return nil, false
	}
	return append(slices.Clone(commonVars), vs...), true
}

// ParseTemplate parses text; known, when not nil, is the set of variables it may name.
func ParseTemplate(text string, known []string) (Template, error) {
	t := Template{Text: text}
	rest := text
	for rest != "" {
		i := strings.Index(rest, "{{")
		if i < 0 {
			t.parts = append(t.parts, tmplPart{lit: rest})
			break
		}
		if i > 0 {
			t.parts = append(t.parts, tmplPart{lit: rest[:i]})
		}
		rest = rest[i+2:]
		j := strings.Index(rest, "}}")
		if j < 0 {
			return Template{}, fmt.Errorf("template %q: a {{ is never closed", text)
		}
		name := strings.TrimSpace(rest[:j])
		if !validVarName(name) {
			return Template{}, fmt.Errorf("template %q: {{%s}} is not a variable name", text, rest[:j])
		}
		if known != nil && !slices.Contains(known, name) {
			return Template{}, fmt.Errorf("template %q names {{%s}}, which this source does not set (it sets %s)",
				text, name, strings.Join(known, ", "))
		}
		t.parts = append(t.parts, tmplPart{v: name})
		rest = rest[j+2:]
	}
	return t, nil
}

func validVarName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i, c := range s {
		ok := c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && (c >= '0' && c <= '9' || c == '.' || c == '-')
		if !ok {
			return false
		}
	}
	return true
}

// Vars names the variables the template uses, in order of first use.
func (t Template) Vars() []string {
	var out []string
	for _, p := range t.parts {
		if p.v != "" && !slices.Contains(out, p.v) {
			out = append(out, p.v)
		}
	}
	return out
}

// Render fills the template. A variable the event lacks is an error (possible only
// for open sets, where the load could not check).
func (t Template) Render(vars map[string]string) (string, error) {
	return t.render(vars, func(s string) string { return s })
}

// RenderPath fills a path template so the result is an agent path: each value is
// lowercased and every run of characters outside [a-z0-9._-] becomes one '-', except
// that '/' in a value (repo = "owner/name") stays a separator.
func (t Template) RenderPath(vars map[string]string) (string, error) {
	return t.render(vars, func(s string) string {
		segs := strings.Split(s, "/")
		for i, seg := range segs {
			segs[i] = slug(seg)
		}
		return strings.Join(segs, "/")
	})
}

// RenderName fills a plan-name template: the whole result is slugged (lowercase,
// [a-z0-9._-], '/' and spaces becoming '-'), at most 64 characters, starting with a
// letter or digit, so any event names a valid plan.
func (t Template) RenderName(vars map[string]string) (string, error) {
	s, err := t.Render(vars)
	if err != nil {
		return "", err
	}
	name := strings.Trim(slug(s), "-._")
	if len(name) > 64 {
		name = strings.TrimRight(name[:64], "-._")
	}
	if name == "" {
		name = "x"
	}
	return name, nil
}

func (t Template) render(vars map[string]string, esc func(string) string) (string, error) {
	var b strings.Builder
	for _, p := range t.parts {
		if p.v == "" {
			b.WriteString(p.lit)
			continue
		}
		v, ok := vars[p.v]
		if !ok {
			return "", fmt.Errorf("template %q: the event has no %q", t.Text, p.v)
		}
		b.WriteString(esc(v))
	}
	return b.String(), nil
}

func slug(s string) string {
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(s) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteRune(c)
			dash = false
		} else if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	out := strings.Trim(b.String(), "-.")
	if len(out) > 64 {
		out = out[:64]
	}
	if out == "" {
		out = "x"
	}
	return out
}
