package ui

import (
	"log/slog"
	"reflect"
	"strings"
	"time"

	"charm.land/lipgloss/v2"

	"orcr/core/wire"
	"orcr/keymaps"
	"orcr/themes"
)

// common is what every component shares: styles, keys, the clock and the logger. The
// root owns it; components hold a pointer so a theme switch reaches them all at once.
type common struct {
	styles themes.Styles
	paints map[*lipgloss.Style]paint // escape sequences of styles, per theme
	keys   keymaps.KeyMap
	now    time.Time
	log    *slog.Logger
}

// stateStyle picks the style for a state's group.
func (c *common) stateStyle(s wire.State) lipgloss.Style {
	return c.groupStyle(groupOf(s))
}

// agentStyle picks the style for an agent: its state's group, with a non-zero exit
// coloured as a failure.
func (c *common) agentStyle(a *wire.Agent) lipgloss.Style {
	return c.groupStyle(groupOfAgent(a))
}

func (c *common) groupStyle(g group) lipgloss.Style { return *c.groupStylePtr(g) }

func (c *common) groupStylePtr(g group) *lipgloss.Style {
	st := &c.styles
	switch g {
	case gBlocked:
		return &st.Blocked
	case gWorking:
		return &st.Working
	case gQueued:
		return &st.Queued
	case gDone:
		return &st.Done
	case gLost:
		return &st.Lost
	}
	return &st.Exited
}

// paneFrame frames a component, with the focused pane's border in the accent colour.
func (c *common) paneFrame(title string, body []string, w, h int, focused bool) string {
	if focused {
		return c.frame(&c.styles.BorderFocused, &c.styles.TitleFocused, title, body, w, h)
	}
	return c.frame(&c.styles.Border, &c.styles.Title, title, body, w, h)
}

// paint is a style reduced to the escape sequences around its text. Painting a one-line
// string is then two concatenations instead of a lipgloss render, which matters for rows
// drawn every frame.
type paint struct{ pre, post string }

// p paints a single-line string with the style at st (a field of c.styles). The
// sequences were taken from lipgloss itself when the theme was set, so they are exactly
// what Render would produce; p only reads them, so drawing changes nothing.
func (c *common) p(st *lipgloss.Style, s string) string {
	if s == "" {
		return ""
	}
	pt, ok := c.paints[st]
	if !ok {
		return st.Render(s) // not a field of c.styles
	}
	return pt.pre + s + pt.post
}

// setStyles switches theme and takes the painted sequences of every style in it.
func (c *common) setStyles(s themes.Styles) {
	c.styles = s
	c.paints = paintsOf(&c.styles)
}

// paintsOf reduces each lipgloss.Style field of st to its paint, keyed by the field's
// address (the key p is called with). A style that does not wrap its text in a prefix
// and a suffix (none today) is left out, and p renders it in full.
func paintsOf(st *themes.Styles) map[*lipgloss.Style]paint {
	out := map[*lipgloss.Style]paint{}
	v := reflect.ValueOf(st).Elem()
	for i := 0; i < v.NumField(); i++ {
		f, ok := v.Field(i).Addr().Interface().(*lipgloss.Style)
		if !ok {
			continue
		}
		const mark = "\x00"
		r := f.Render(mark)
		if j := strings.Index(r, mark); j >= 0 {
			out[f] = paint{r[:j], r[j+len(mark):]}
		}
	}
	return out
}
