package ui

import (
	"log/slog"
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
	keys   keymaps.KeyMap
	now    time.Time
	log    *slog.Logger
}

// stateStyle picks the style for a state's group.
func (c *common) stateStyle(s wire.State) lipgloss.Style {
	return c.groupStyle(groupOf(s))
}

func (c *common) groupStyle(g group) lipgloss.Style {
	st := &c.styles
	switch g {
	case gBlocked:
		return st.Blocked
	case gWorking:
		return st.Working
	case gQueued:
		return st.Queued
	case gDone:
		return st.Done
	case gLost:
		return st.Lost
	}
	return st.Exited
}

// paneFrame frames a component, with the focused pane's border in the accent colour.
func (c *common) paneFrame(title string, body []string, w, h int, focused bool) string {
	if focused {
		return frame(c.styles.BorderFocused, c.styles.TitleFocused, title, body, w, h)
	}
	return frame(c.styles.Border, c.styles.Title, title, body, w, h)
}
