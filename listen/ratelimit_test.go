package listen

import (
	"strings"
	"testing"
	"time"
)

func TestLimiterWindows(t *testing.T) {
	loc := time.FixedZone("X", 0)
	t0 := time.Date(2026, 3, 1, 20, 0, 0, 0, loc)
	l := NewLimiter([]RateLimit{{Max: 5, Per: time.Hour, Text: "1h"}, {Max: 8, Per: 24 * time.Hour, Text: "day"}}, nil)
	at := []time.Duration{12 * time.Minute, 20 * time.Minute, 30 * time.Minute, 40 * time.Minute, 50 * time.Minute}
	for _, d := range at {
		if !l.Allow(t0.Add(d)) {
			t.Fatalf("refused at +%s", d)
		}
		l.Record(t0.Add(d))
	}
	now := t0.Add(55 * time.Minute)
	if l.Allow(now) {
		t.Fatal("a sixth dispatch within the hour was allowed")
	}
	next := l.NextAt(now)
	if want := t0.Add(72 * time.Minute); !next.Equal(want) {
		t.Fatalf("next at %s, want %s (the first of the five ages out)", next, want)
	}
	if l.Allow(next.Add(-time.Nanosecond)) || !l.Allow(next) {
		t.Fatal("the window does not open exactly at NextAt")
	}
	if got := l.Describe(now); got != "5 per 1h (5 used, next at 21:12); 8 per day (5 used)" {
		t.Fatalf("describe: %q", got)
	}
	// Fill the day window: the hour frees up but the day does not.
	for _, d := range []time.Duration{80 * time.Minute, 90 * time.Minute, 100 * time.Minute} {
		l.Record(t0.Add(d))
	}
	now = t0.Add(200 * time.Minute)
	if l.Allow(now) {
		t.Fatal("the day window was ignored")
	}
	if next := l.NextAt(now); !next.Equal(t0.Add(24*time.Hour + 12*time.Minute)) {
		t.Fatalf("day next at %s", next)
	}
	st := l.Standings(now)
	if st[0].Used != 0 || !st[0].NextAt.IsZero() || st[1].Used != 8 || !strings.Contains(st[1].String(), "next at 20:12") {
		t.Fatalf("standings %+v / %s", st, st[1])
	}
	// Stored times round-trip: a restarted limiter stands where this one does.
	again := NewLimiter(l.limits, l.Times(now))
	if again.Allow(now) || !again.NextAt(now).Equal(l.NextAt(now)) {
		t.Fatal("restored limiter differs")
	}
	if n := len(l.Times(t0.Add(25 * time.Hour))); n != 3 {
		t.Fatalf("pruned to %d times, want the 3 inside the last day", n)
	}
}

func TestLimiterWithoutLimitsAlwaysAllows(t *testing.T) {
	l := NewLimiter(nil, nil)
	now := time.Now()
	for range 100 {
		l.Record(now)
	}
	if !l.Allow(now) || !l.NextAt(now).Equal(now) || l.Describe(now) != "" || len(l.Times(now)) != 0 {
		t.Fatal("no limits should mean no ceiling")
	}
}

func TestTemplates(t *testing.T) {
	known, _ := VarsFor("github-issues")
	tm, err := ParseTemplate("Fix #{{ number }}: {{title}} ({{number}})", known)
	if err != nil {
		t.Fatal(err)
	}
	if got := tm.Vars(); len(got) != 2 || got[0] != "number" || got[1] != "title" {
		t.Fatalf("vars %v", got)
	}
	out, err := tm.Render(map[string]string{"number": "7", "title": "{{not expanded}}"})
	if err != nil || out != "Fix #7: {{not expanded}} (7)" {
		t.Fatalf("render %q %v", out, err)
	}
	if _, err := ParseTemplate("{{ }}", nil); err == nil {
		t.Fatal("empty placeholder accepted")
	}
	if _, err := ParseTemplate("{{listener}}/{{id}}/{{source}}", known); err != nil {
		t.Fatalf("common vars refused: %v", err)
	}
	p, _ := ParseTemplate("gh/{{repo}}/{{title}}", nil)
	got, err := p.RenderPath(map[string]string{"repo": "My-Org/Repo.JS", "title": "  Crash: on START!! ünïcode "})
	if err != nil || got != "gh/my-org/repo.js/crash-on-start-n-code" {
		t.Fatalf("path %q %v", got, err)
	}
	if got, _ := p.RenderPath(map[string]string{"repo": "o/r", "title": "!!!"}); got != "gh/o/r/x" {
		t.Fatalf("empty slug: %q", got)
	}
	if _, ok := VarsFor("shell"); ok {
		t.Fatal("shell vars should be open")
	}
	for _, st := range SourceTypes() {
		if _, ok := keysFor[st]; !ok {
			t.Fatalf("source type %s has no key list", st)
		}
	}
}
