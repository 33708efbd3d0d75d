package run

import (
	"strings"
	"testing"
)

func TestParseReview(t *testing.T) {
	cases := []struct {
		name, text string
		decision   string
		blockers   []string // Blocker.String()
		approved   bool
	}{
		{"plain approve", "Looks good.\nVERDICT: approve", "approve", nil, true},
		{"bold list approve", "- **VERDICT:** `approve`", "approve", nil, true},
		{"approved lgtm", "verdict - LGTM", "approve", nil, true},
		{"changes with blockers", "VERDICT: changes\nBLOCKER: import/csv.go:42 — skips the header — the first row is lost\nBLOCKER: go.mod — new dependency — not needed",
			"changes", []string{"import/csv.go:42 — skips the header — the first row is lost", "go.mod — new dependency — not needed"}, false},
		{"request changes words", "## Verdict: Request changes\n* BLOCKER: a.go:3 - nil deref - crashes on empty input", "changes", []string{"a.go:3 — nil deref — crashes on empty input"}, false},
		{"approve with blockers is not approval", "VERDICT: approve\nBLOCKER: x.go:1 — typo — wrong name", "approve", []string{"x.go:1 — typo — wrong name"}, false},
		{"approve with changes", "VERDICT: approve with changes", "changes", nil, false},
		{"silence", "I read the diff. It is fine I think.", "", nil, false},
		{"empty", "", "", nil, false},
		{"verdict without word", "VERDICT:", "", nil, false},
		{"last verdict wins", "VERDICT: approve\n…on second thought\nVERDICT: changes\nBLOCKER: b.go:9 — race — two writers", "changes", []string{"b.go:9 — race — two writers"}, false},
		{"blocker none", "VERDICT: approve\nBLOCKERS: none", "approve", nil, true},
		{"en dashes, column", "VERDICT: changes\nBLOCKER: pkg/x.go:10:4 – unchecked error – fails silently", "changes", []string{"pkg/x.go:10 — unchecked error — fails silently"}, false},
		{"blocker without location", "VERDICT: changes\nBLOCKER: no tests for the importer", "changes", []string{"no tests for the importer"}, false},
		{"in a code fence", "```\nVERDICT: changes\nBLOCKER: main.go:1 — x — y\n```", "changes", []string{"main.go:1 — x — y"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v := ParseReview(c.text)
			if v.Decision != c.decision {
				t.Errorf("decision %q, want %q", v.Decision, c.decision)
			}
			var got []string
			for _, b := range v.Blockers {
				got = append(got, b.String())
			}
			if strings.Join(got, "|") != strings.Join(c.blockers, "|") {
				t.Errorf("blockers %q, want %q", got, c.blockers)
			}
			if v.Approved() != c.approved {
				t.Errorf("approved %v, want %v", v.Approved(), c.approved)
			}
		})
	}
	if (*Verdict)(nil).Approved() {
		t.Error("no verdict approved")
	}
}

// FuzzParseReview: any text parses without panicking; approval needs an explicit
// approve verdict line and no blockers; a text without the word "verdict" never
// decides anything.
func FuzzParseReview(f *testing.F) {
	for _, s := range []string{"VERDICT: approve", "VERDICT: changes\nBLOCKER: a.go:1 — b — c", "**Verdict**: LGTM", "BLOCKER: :::", "BLOCKER:  — — ", "verdict", "\x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v := ParseReview(s)
		if v.Approved() && (v.Decision != "approve" || len(v.Blockers) > 0) {
			t.Fatalf("approved %+v", v)
		}
		if !strings.Contains(strings.ToLower(s), "verdict") && v.Decision != "" {
			t.Fatalf("decision %q from a text without a verdict: %q", v.Decision, s)
		}
		if v.Approved() && strings.Contains(strings.ToLower(s), "blocker") {
			for _, l := range strings.Split(s, "\n") {
				if m := reBlocker().FindStringSubmatch(cleanLine(l)); m != nil {
					if _, ok := parseBlocker(m[1]); ok {
						t.Fatalf("approved with a blocker line %q", l)
					}
				}
			}
		}
		for _, b := range v.Blockers {
			if b.What == "" || b.Line < 0 {
				t.Fatalf("blocker %+v", b)
			}
		}
	})
}
