package agentkit

import (
	"testing"
	"time"
)

func TestParseReset(t *testing.T) {
	now := time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC)
	saigon, _ := time.LoadLocation("Asia/Saigon")
	cases := []struct {
		text string
		want time.Time
	}{
		// 21:50 Saigon on Nov 30 is 14:50 UTC, already past at 20:00 UTC: next day.
		{"You've hit your session limit · resets 9:50pm (Asia/Saigon)", time.Date(2026, 12, 1, 21, 50, 0, 0, saigon).UTC()},
		{"5-hour limit reached ∙ resets 11pm", time.Date(2026, 11, 30, 23, 0, 0, 0, time.UTC)},
		{"resets 3pm", time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC)},
		{"Claude AI usage limit reached|1767400000", time.Unix(1767400000, 0).UTC()},
		{"… or try again at Dec 1st, 2026 12:59 AM.", time.Date(2026, 12, 1, 0, 59, 0, 0, time.UTC)},
		{"■ You’ve hit your usage limit. … or try again in 4 days 20 hours", now.Add(4*24*time.Hour + 20*time.Hour)},
		{"try again in 45 minutes", now.Add(45 * time.Minute)},
	}
	for _, c := range cases {
		got := ParseReset(c.text, now, time.UTC)
		if got == nil || !got.Equal(c.want) {
			t.Errorf("ParseReset(%q) = %v, want %v", c.text, got, c.want)
		}
	}
	for _, s := range []string{"", "Server is temporarily limiting requests (not your usage limit)", "resets soon", "resets 99:99pm"} {
		if got := ParseReset(s, now, time.UTC); got != nil {
			t.Errorf("ParseReset(%q) = %v, want nil", s, got)
		}
	}
}

func TestShellQuoteAndWindows(t *testing.T) {
	for in, want := range map[string]string{"/usr/bin/orcr": "/usr/bin/orcr", "/a b/orcr": "'/a b/orcr'", "it's": `'it'\''s'`, "": "''"} {
		if got := ShellQuote(in); got != want {
			t.Errorf("ShellQuote(%q) = %s, want %s", in, got, want)
		}
	}
	for min, want := range map[int]string{300: "5h", 299: "5h", 10080: "weekly", 10079: "weekly", 1440: "", 0: ""} {
		if got := WindowName(min); got != want {
			t.Errorf("WindowName(%d) = %q, want %q", min, got, want)
		}
	}
}
