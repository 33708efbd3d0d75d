package run

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// The reviewer ends its answer with
//
//	VERDICT: approve | changes
//	BLOCKER: file:line — what — why
//
// and models write that loosely: in bold, in a list, in a code fence, "Verdict -
// Approved", "REQUEST CHANGES", en dashes or " - " between the parts, a file without a
// line. ParseReview accepts all of that. What it never does is read approval into
// anything but an explicit approve verdict: no verdict line is no decision (the
// autopilot asks once more, then holds), and the last verdict line counts, so a
// reviewer that changes its mind at the end is taken at its last word.

var (
	reVerdict = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)^verdict\s*[:=\-–—]?\s*(.*)$`)
	})
	reBlocker = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)^blockers?\s*(?:\d+\s*)?[:=\-–—]\s*(.*)$`)
	})
	reLoc = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^([^\s:]+?)(?::(\d+))?(?::\d+)?(?:\s|$)`)
	})
)

// ParseReview reads a reviewer's last message.
func ParseReview(text string) Verdict {
	var v Verdict
	for _, raw := range strings.Split(text, "\n") {
		l := cleanLine(raw)
		if l == "" {
			continue
		}
		if m := reBlocker().FindStringSubmatch(l); m != nil {
			if b, ok := parseBlocker(m[1]); ok {
				v.Blockers = append(v.Blockers, b)
			}
			continue
		}
		if m := reVerdict().FindStringSubmatch(l); m != nil {
			if d := decision(m[1]); d != "" {
				v.Decision = d
			}
		}
	}
	return v
}

// cleanLine drops the markdown a model wraps a line in: list marks, quotes, bold,
// code ticks, heading marks.
func cleanLine(s string) string {
	s = strings.TrimSpace(s)
	for {
		t := strings.TrimLeft(s, "-*>#+• \t")
		t = strings.TrimSpace(t)
		if t == s {
			break
		}
		s = t
	}
	// A marker becomes a space, not nothing: "Verdi**ct" is no verdict line.
	s = strings.NewReplacer("**", " ", "__", " ", "`", " ").Replace(s)
	return strings.TrimSpace(s)
}

// decision maps what follows "VERDICT:" onto approve or changes ("" for neither).
func decision(s string) string {
	w := strings.ToLower(strings.Trim(strings.TrimSpace(s), ".!*_`\"'()[] "))
	switch {
	case w == "":
		return ""
	case strings.HasPrefix(w, "approve"), w == "lgtm", w == "accept", w == "accepted", w == "pass", w == "ok":
		// "approve with changes" is not an approval either.
		if strings.Contains(w, "change") || strings.Contains(w, "but") {
			return "changes"
		}
		return "approve"
	case strings.Contains(w, "change"), strings.Contains(w, "reject"), strings.Contains(w, "revise"),
		strings.Contains(w, "block"), w == "fail", w == "no":
		return "changes"
	}
	return ""
}

// parseBlocker reads "file:line — what — why"; the location is optional, the parts
// are split on em or en dashes, " - " or " -- ".
func parseBlocker(s string) (Blocker, bool) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "none") || strings.EqualFold(s, "none.") || s == "-" {
		return Blocker{}, false
	}
	var b Blocker
	if m := reLoc().FindStringSubmatch(s); m != nil && looksLikePath(m[1], m[2] != "") {
		b.File = m[1]
		if m[2] != "" {
			b.Line, _ = strconv.Atoi(m[2])
		}
		s = strings.TrimLeft(strings.TrimSpace(s[len(m[0]):]), "-–—: ")
	}
	parts := splitDashes(s)
	if len(parts) > 0 {
		b.What = parts[0]
	}
	if len(parts) > 1 {
		b.Why = strings.Join(parts[1:], " — ")
	}
	if b.What == "" && b.File == "" {
		return Blocker{}, false
	}
	if b.What == "" {
		b.What = "(no description)"
	}
	return b, true
}

func looksLikePath(s string, hasLine bool) bool {
	return hasLine || strings.ContainsAny(s, "/.") && !strings.HasSuffix(s, ".")
}

func splitDashes(s string) []string {
	for _, sep := range []string{" -- ", " - "} {
		s = strings.ReplaceAll(s, sep, " — ")
	}
	s = strings.ReplaceAll(s, "–", "—")
	var out []string
	for _, p := range strings.Split(s, "—") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
