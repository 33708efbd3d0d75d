package agentkit

import (
	"regexp"
	"strconv"
	"strings"
	"sync"

	"orcr/core/wire"
)

// MenuItem is one numbered line of a menu as drawn on screen.
type MenuItem struct {
	N        int
	Label    string // the text after "N. ", trimmed
	Selected bool   // the cursor (❯ › > ▶) is on it
	Line     int    // index of its screen line
}

// Menu is a numbered menu found at the bottom of a screen: the way claude, codex and
// many plain programs ask for a choice.
type Menu struct {
	// Question is the nearest non-blank line above the first item.
	Question string
	Items    []MenuItem
	// First and Last are the screen lines of the first and last item.
	First, Last int
	// Below holds the non-blank lines under the last item (key hints).
	Below []string
}

// Bounds of the menu search, so a numbered list high up in a transcript is never
// taken for a menu.
const (
	menuMaxBelow = 8 // non-blank lines allowed under the last item
	menuMaxGap   = 3 // lines allowed between two items (wrapped labels, descriptions)
	menuMaxItems = 12
)

var menuItemRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^(\s*)([❯›>▶→]\s*)?(\d{1,2})[.)]\s+(\S.*?)\s*$`)
})

// ParseMenu finds the numbered menu closest to the bottom of screen: items numbered 1..n
// in order (n ≥ 2), at most menuMaxBelow non-blank lines under the last. With
// needCursor, exactly one item must carry the selection cursor, as TUI menus do; plain
// programs that print choices and read a line have none. It returns nil when there is
// no such menu.
func ParseMenu(screen string, needCursor bool) *Menu {
	lines := strings.Split(screen, "\n")
	end := len(lines) - 1
	for end >= 0 && strings.TrimSpace(lines[end]) == "" {
		end--
	}
	var below []string
	last := -1
	for i := end; i >= 0 && len(below) <= menuMaxBelow; i-- {
		if menuItemRE().MatchString(lines[i]) {
			last = i
			break
		}
		if t := strings.TrimSpace(lines[i]); t != "" {
			below = append([]string{t}, below...)
		}
	}
	if last < 0 {
		return nil
	}
	var items []MenuItem
	gap := 0
	for i := last; i >= 0 && len(items) < menuMaxItems; i-- {
		m := menuItemRE().FindStringSubmatch(lines[i])
		if m == nil {
			if gap++; gap > menuMaxGap {
				break
			}
			continue
		}
		n, _ := strconv.Atoi(m[3])
		want := 0
		if len(items) > 0 {
			want = items[0].N - 1
		}
		if len(items) > 0 && n != want {
			break
		}
		gap = 0
		items = append([]MenuItem{{N: n, Label: m[4], Selected: m[2] != "", Line: i}}, items...)
		if n == 1 {
			break
		}
	}
	if len(items) < 2 || items[0].N != 1 {
		return nil
	}
	sel := 0
	for _, it := range items {
		if it.Selected {
			sel++
		}
	}
	if needCursor && sel != 1 {
		return nil
	}
	m := &Menu{Items: items, First: items[0].Line, Last: items[len(items)-1].Line}
	// Lines between items that are not items (descriptions, hints) are not counted
	// as below; only what follows the last item is.
	for i := m.Last + 1; i <= end; i++ {
		if t := strings.TrimSpace(lines[i]); t != "" {
			m.Below = append(m.Below, t)
		}
	}
	for i := m.First - 1; i >= 0; i-- {
		if t := strings.TrimSpace(lines[i]); t != "" {
			m.Question = t
			break
		}
	}
	return m
}

// Selected is the 0-based index of the item under the cursor, or -1.
func (m *Menu) Selected() int {
	for i, it := range m.Items {
		if it.Selected {
			return i
		}
	}
	return -1
}

// HasBelow reports whether a line under the menu contains s (a key hint).
func (m *Menu) HasBelow(s string) bool {
	for _, l := range m.Below {
		if strings.Contains(l, s) {
			return true
		}
	}
	return false
}

var keyHintRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(.*\S)\s+\((esc|[a-z])\)$`) })

// SplitKeyHint splits a trailing one-key hint off a label: codex draws
// "Yes, proceed (y)"; it returns "Yes, proceed", "y". Without a hint the key is "".
func SplitKeyHint(label string) (string, string) {
	if m := keyHintRE().FindStringSubmatch(label); m != nil {
		return m[1], m[2]
	}
	return label, ""
}

// Classify says what choosing an option with this label means. The order matters:
// "Yes, and switch to auto mode" approves but also hands every later prompt to auto
// mode, which is not what --allow or --always ask for, so it is "other"; "No, and tell
// Claude what to do differently" is a deny.
func Classify(label string) string {
	l := strings.ToLower(strings.TrimSpace(label))
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(l, s) {
				return true
			}
		}
		return false
	}
	starts := func(prefixes ...string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(l, p) {
				return true
			}
		}
		return false
	}
	switch {
	case has("auto mode", "bypass", "yolo", "dangerously"):
		return wire.MeaningOther
	case starts("no", "deny", "reject", "cancel", "don't allow", "do not allow", "keep planning") ||
		has("tell claude what to", "tell codex what to", "what to do differently"):
		return wire.MeaningDeny
	case starts("yes", "allow", "approve", "proceed", "accept", "ok", "always allow", "trust"):
		if has("always", "don't ask again", "do not ask again", "dont ask again", "auto-accept", "for this session", "for the session") &&
			!has("switch to default", "ask each time") {
			return wire.MeaningAllowAlways
		}
		return wire.MeaningAllowOnce
	}
	return wire.MeaningOther
}

// Options turns menu items into answer options: the key is the item's number unless
// the label carries a one-key hint, which is then split off.
func (m *Menu) Options() []wire.Option {
	out := make([]wire.Option, 0, len(m.Items))
	for _, it := range m.Items {
		label, key := SplitKeyHint(it.Label)
		if key == "" {
			key = strconv.Itoa(it.N)
		}
		out = append(out, wire.Option{Label: label, Key: key, Meaning: Classify(label)})
	}
	return out
}

// MoveKeys are the arrow presses that take a menu's cursor from item from to item to.
func MoveKeys(from, to int) []string {
	var keys []string
	for ; from < to; from++ {
		keys = append(keys, "down")
	}
	for ; from > to; from-- {
		keys = append(keys, "up")
	}
	return keys
}
