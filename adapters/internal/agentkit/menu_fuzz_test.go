package agentkit

import (
	"strings"
	"testing"

	"orcr/core/wire"
)

// FuzzParseMenu feeds arbitrary screens to the option parser: it never panics, a menu
// it returns is numbered 1..n in screen order with at most one cursor when one is
// required, and every option has a key and one of the four meanings.
func FuzzParseMenu(f *testing.F) {
	for _, s := range []string{
		" Do you want to proceed?\n ❯ 1. Yes\n   2. Yes, and always allow access to /w from this project\n   3. Yes, and switch to auto mode · x\n   4. No\n\n Esc to cancel · Tab to amend",
		"  Would you like to run the following command?\n\n  $ rm -rf build\n\n› 1. Yes, proceed (y)\n  2. Yes, and don't ask again (p)\n  3. No, and tell Codex what to do differently (esc)\n\n  Press enter to confirm or esc to cancel",
		"QUESTION: pick\n1) a\n2) b\n> ",
		"1. x\n1. y\n2. z",
		"❯ 1. a\n❯ 2. b",
		"9. nine\n10. ten",
		strings.Repeat("1. a\n", 200),
		"\x00\n 1.\t \n2. \u202e",
	} {
		f.Add(s, true)
		f.Add(s, false)
	}
	meanings := map[string]bool{wire.MeaningAllowOnce: true, wire.MeaningAllowAlways: true, wire.MeaningDeny: true, wire.MeaningOther: true}
	f.Fuzz(func(t *testing.T, screen string, needCursor bool) {
		m := ParseMenu(screen, needCursor)
		if m == nil {
			return
		}
		if len(m.Items) < 2 || len(m.Items) > menuMaxItems {
			t.Fatalf("menu of %d items", len(m.Items))
		}
		sel := 0
		for i, it := range m.Items {
			if it.N != i+1 {
				t.Fatalf("item %d numbered %d", i, it.N)
			}
			if i > 0 && it.Line <= m.Items[i-1].Line {
				t.Fatalf("items out of screen order")
			}
			if it.Selected {
				sel++
			}
		}
		if needCursor && sel != 1 {
			t.Fatalf("%d cursors", sel)
		}
		for _, o := range m.Options() {
			if o.Key == "" || !meanings[o.Meaning] || o.Label == "" {
				t.Fatalf("option %+v", o)
			}
		}
		if m.Selected() >= len(m.Items) {
			t.Fatal("selection out of range")
		}
	})
}

// Meanings decided by label, the ones that made the wrong answer of issue 9.
func TestClassify(t *testing.T) {
	for label, want := range map[string]string{
		"Yes": wire.MeaningAllowOnce,
		"Yes, and always allow access to /w/build from this project": wire.MeaningAllowAlways,
		"Yes, and switch to auto mode":                               wire.MeaningOther,
		"No":                                                         wire.MeaningDeny,
		"Yes, and use auto mode":                                     wire.MeaningOther,
		"Yes, manually approve edits":                                wire.MeaningAllowOnce,
		"Tell Claude what to change":                                 wire.MeaningDeny,
		"Yes, proceed":                                               wire.MeaningAllowOnce,
		"Yes, and don't ask again for commands that start with `rm -rf b`": wire.MeaningAllowAlways,
		"No, and tell Codex what to do differently":                        wire.MeaningDeny,
		"Yes, and switch to default (ask each time) for this session":      wire.MeaningAllowOnce,
		"Yes, auto-accept edits":                                           wire.MeaningAllowAlways,
		"No, keep planning":                                                wire.MeaningDeny,
		"Allow once":                                                       wire.MeaningAllowOnce,
		"Allow always":                                                     wire.MeaningAllowAlways,
		"Reject":                                                           wire.MeaningDeny,
		"Postgres":                                                         wire.MeaningOther,
		"Yes, I trust this folder":                                         wire.MeaningAllowOnce,
		"No, exit":                                                         wire.MeaningDeny,
		"Yes, and bypass permissions":                                      wire.MeaningOther,
	} {
		if got := Classify(label); got != want {
			t.Errorf("Classify(%q) = %s, want %s", label, got, want)
		}
	}
}
