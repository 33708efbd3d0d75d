package agentkit

import (
	"testing"
	"time"
)

// FuzzParseReset feeds arbitrary screen or message text to the usage-limit reset
// parser: it must never panic, and a time it returns is a real time near now.
func FuzzParseReset(f *testing.F) {
	for _, s := range []string{
		"5-hour limit reached ∙ resets 3pm (Europe/Berlin)",
		"You've hit your usage limit. Try again in 2 hours 5 minutes.",
		"try again at Dec 1st, 2026 9:30 PM",
		"Claude AI usage limit reached|1764000000",
		"resets 99:99 am (Not/AZone)",
		"try again in 999999999999 days",
	} {
		f.Add(s)
	}
	now := time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, text string) {
		got := ParseReset(text, now, time.UTC)
		if got != nil && (got.Year() < 1970 || got.Year() > 2200) {
			t.Fatalf("%q → %v", text, got)
		}
	})
}

// Absurd numbers in limit text are not resets.
func TestParseResetRefusesAbsurd(t *testing.T) {
	now := time.Date(2026, 11, 30, 20, 0, 0, 0, time.UTC)
	for _, s := range []string{
		"try again in 999999999999 days",
		"try again in 5000 days",
		"Claude AI usage limit reached|99999999999",
		"try again at Dec 1st, 2026 25:61 PM",
	} {
		if got := ParseReset(s, now, time.UTC); got != nil {
			t.Errorf("%q → %v, want none", s, got)
		}
	}
	if got := ParseReset("try again in 4 days 20 hours", now, time.UTC); got == nil || !got.Equal(now.Add(116*time.Hour)) {
		t.Errorf("4 days 20 hours → %v", got)
	}
}
