// Package themes owns the dashboard's colours: palettes of semantic tokens (built-in dark,
// light and high-contrast, plus user palettes from config) and the one builder that turns a
// palette into the Styles the ui package draws with. Nothing here is a package-level style,
// so switching themes is just building a new Styles value.
package themes

import (
	"fmt"
	"image/color"
	"regexp"
	"sort"
	"strings"
	"sync"

	"charm.land/lipgloss/v2"
)

// Palette maps semantic tokens to colours. Tokens name a purpose, never a hue, so a theme
// can put any colour behind them.
type Palette struct {
	Name string

	Fg          string // body text
	Muted       string // secondary text: columns, hints, borders of unfocused panes
	Subtle      string // least important text: roll-ups, separators
	Accent      string // titles, the focused pane's border, key names in help
	SelectionFg string // text of the selected row
	SelectionBg string // background of the selected row
	StatusFg    string // status bar text
	StatusBg    string // status bar background

	Working string // agent busy on a turn
	Blocked string // agent waiting on a person or a limit
	Done    string // turn finished / idle, ready for input
	Queued  string // waiting for admission or starting
	Exited  string // ended normally, killed
	Lost    string // failed, vanished, or exited with a non-zero code

	OK     string // healthy gauges
	Warn   string // gauges near a limit
	Danger string // destructive keys, errors, gauges at a limit
}

// Tokens lists the palette's token names as config spells them ([themes.NAME] token = "#rrggbb").
var Tokens = []string{"fg", "muted", "subtle", "accent", "selection_fg", "selection_bg",
	"status_fg", "status_bg", "working", "blocked", "done", "queued", "exited", "lost",
	"ok", "warn", "danger"}

func (p *Palette) slot(token string) *string {
	switch token {
	case "fg":
		return &p.Fg
	case "muted":
		return &p.Muted
	case "subtle":
		return &p.Subtle
	case "accent":
		return &p.Accent
	case "selection_fg":
		return &p.SelectionFg
	case "selection_bg":
		return &p.SelectionBg
	case "status_fg":
		return &p.StatusFg
	case "status_bg":
		return &p.StatusBg
	case "working":
		return &p.Working
	case "blocked":
		return &p.Blocked
	case "done":
		return &p.Done
	case "queued":
		return &p.Queued
	case "exited":
		return &p.Exited
	case "lost":
		return &p.Lost
	case "ok":
		return &p.OK
	case "warn":
		return &p.Warn
	case "danger":
		return &p.Danger
	}
	return nil
}

// Dark is the default palette, for dark terminal backgrounds.
func Dark() Palette {
	return Palette{Name: "dark",
		Fg: "#d0d0d0", Muted: "#8a8a8a", Subtle: "#5f5f5f", Accent: "#5fafff",
		SelectionFg: "#ffffff", SelectionBg: "#30405a", StatusFg: "#d0d0d0", StatusBg: "#262626",
		Working: "#5fafff", Blocked: "#ffaf00", Done: "#5fd787", Queued: "#af87ff",
		Exited: "#808080", Lost: "#ff5f5f", OK: "#5fd787", Warn: "#ffaf00", Danger: "#ff5f5f"}
}

// Light is for light terminal backgrounds.
func Light() Palette {
	return Palette{Name: "light",
		Fg: "#262626", Muted: "#6c6c6c", Subtle: "#9e9e9e", Accent: "#005fd7",
		SelectionFg: "#000000", SelectionBg: "#cfe0ff", StatusFg: "#262626", StatusBg: "#e4e4e4",
		Working: "#005fd7", Blocked: "#af5f00", Done: "#008700", Queued: "#8700af",
		Exited: "#767676", Lost: "#d70000", OK: "#008700", Warn: "#af5f00", Danger: "#d70000"}
}

// HighContrast uses pure, saturated colours on black for low vision and bad projectors.
func HighContrast() Palette {
	return Palette{Name: "high-contrast",
		Fg: "#ffffff", Muted: "#e0e0e0", Subtle: "#c0c0c0", Accent: "#00ffff",
		SelectionFg: "#000000", SelectionBg: "#ffff00", StatusFg: "#000000", StatusBg: "#ffffff",
		Working: "#00ffff", Blocked: "#ffff00", Done: "#00ff00", Queued: "#ff00ff",
		Exited: "#ffffff", Lost: "#ff0000", OK: "#00ff00", Warn: "#ffff00", Danger: "#ff0000"}
}

// BuiltinNames lists the built-in themes in the order the dashboard cycles through them.
var BuiltinNames = []string{"dark", "light", "high-contrast"}

func builtin(name string) (Palette, bool) {
	switch name {
	case "", "dark":
		return Dark(), true
	case "light":
		return Light(), true
	case "high-contrast":
		return HighContrast(), true
	}
	return Palette{}, false
}

var hexColor = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^#[0-9a-fA-F]{6}$`) })

// FromTokens builds a user palette: the tokens given override the base theme (the
// "base" token names it; default dark). Unknown tokens and malformed colours are errors,
// so a typo in config.toml is reported instead of silently ignored.
func FromTokens(name string, tokens map[string]string) (Palette, error) {
	p, ok := builtin(tokens["base"])
	if !ok {
		return Palette{}, fmt.Errorf("theme %s: unknown base %q", name, tokens["base"])
	}
	p.Name = name
	keys := make([]string, 0, len(tokens))
	for k := range tokens {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if k == "base" {
			continue
		}
		slot := p.slot(strings.ReplaceAll(strings.ToLower(k), "-", "_"))
		if slot == nil {
			return Palette{}, fmt.Errorf("theme %s: unknown token %q (known: %s)", name, k, strings.Join(Tokens, ", "))
		}
		if !hexColor().MatchString(tokens[k]) {
			return Palette{}, fmt.Errorf("theme %s: token %s: %q is not #rrggbb", name, k, tokens[k])
		}
		*slot = tokens[k]
	}
	return p, nil
}

// Resolve finds a theme by name among the built-ins and the user themes.
func Resolve(name string, user map[string]map[string]string) (Palette, error) {
	if p, ok := builtin(name); ok {
		return p, nil
	}
	if t, ok := user[name]; ok {
		return FromTokens(name, t)
	}
	return Palette{}, fmt.Errorf("unknown theme %q (built-in: %s)", name, strings.Join(BuiltinNames, ", "))
}

// Names lists the built-in themes then the user themes, sorted, for cycling.
func Names(user map[string]map[string]string) []string {
	out := append([]string(nil), BuiltinNames...)
	var extra []string
	for n := range user {
		if _, ok := builtin(n); !ok {
			extra = append(extra, n)
		}
	}
	sort.Strings(extra)
	return append(out, extra...)
}

func c(s string) color.Color { return lipgloss.Color(s) }
