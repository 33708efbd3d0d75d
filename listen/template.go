package listen

import (
	"crypto/sha256"
	"encoding/hex"
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

// Path bounds (DESIGN §1): segments match [a-z0-9][a-z0-9._-]{0,63}, at most 16.
const (
	maxPathDepth   = 16
	maxSegmentLen  = 64
	segmentHashLen = 8 // hex digits of a truncated segment's hash
)

// RenderPath fills a path template so that every event gives a valid agent path, never
// one the kernel refuses (an event whose path is refused would be held forever):
//
//   - each value is slugged: lowercased, every run of characters outside [a-z0-9._-]
//     becomes one '-', leading and trailing '-' and '.' are trimmed, an empty value is
//     "x"; a '/' in a value (repo = "owner/name") stays a separator;
//   - then the whole path is made valid: empty segments ("a//b") are dropped; a segment
//     that is still not valid (the template's own text: uppercase, a literal glued to a
//     long value) is slugged the same way; a segment over 64 characters keeps its first
//     55 and ends in '-' and 8 hex digits of its hash, so two long titles sharing a
//     prefix still give two paths; past 16 levels the extra segments are joined with
//     '-' into the 16th (then cut as above).
func (t Template) RenderPath(vars map[string]string) (string, error) {
	s, err := t.render(vars, func(s string) string {
		segs := strings.Split(s, "/")
		for i, seg := range segs {
			segs[i] = slugValue(seg)
		}
		return strings.Join(segs, "/")
	})
	if err != nil {
		return "", err
	}
	return validPath(s), nil
}

// validPath makes a rendered path valid by the rules RenderPath lists.
func validPath(p string) string {
	var segs []string
	for _, seg := range strings.Split(p, "/") {
		if seg != "" {
			segs = append(segs, seg)
		}
	}
	if len(segs) > maxPathDepth {
		segs = append(segs[:maxPathDepth-1], strings.Join(segs[maxPathDepth-1:], "-"))
	}
	for i, seg := range segs {
		if !validSegment(seg) {
			seg = slugValue(seg)
		}
		if len(seg) > maxSegmentLen {
			sum := sha256.Sum256([]byte(seg))
			keep := maxSegmentLen - segmentHashLen - 1
			seg = strings.TrimRight(seg[:keep], "-.") + "-" + hex.EncodeToString(sum[:])[:segmentHashLen]
		}
		segs[i] = seg
	}
	if len(segs) == 0 {
		return "x"
	}
	return strings.Join(segs, "/")
}

// validSegment is DESIGN §1's [a-z0-9][a-z0-9._-]{0,63}.
func validSegment(s string) bool {
	if s == "" || len(s) > maxSegmentLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || i > 0 && (c == '.' || c == '_' || c == '-')
		if !ok {
			return false
		}
	}
	return true
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
	out := slugValue(s)
	if len(out) > 64 {
		out = out[:64]
	}
	return out
}

// slugValue lowercases s and turns every run of characters outside [a-z0-9._-] into
// one '-', trimming '-' and '.' at both ends and '_' at the start (a segment starts
// with a letter or digit); "" becomes "x". It does not bound the length.
func slugValue(s string) string {
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
	out := strings.TrimLeft(strings.Trim(b.String(), "-."), "_.-")
	if out == "" {
		out = "x"
	}
	return out
}
