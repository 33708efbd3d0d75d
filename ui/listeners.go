package ui

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"orcr/core"
	"orcr/core/wire"
	listenapi "orcr/listen/api"
)

// The listeners tab of the side panel (DESIGN §11): each listener's state, last and
// next poll, fires, held events, last error and rate-limit standing. With the panel
// focused on this tab, up/down select a listener and e enables or disables it. Like
// the other panels it is re-read on the refresh tick; Update only asks for the call.

type (
	listenersMsg struct {
		ls  []wire.Listener
		err error
	}
	// listenerToggleMsg asks the root model to enable or disable a listener.
	listenerToggleMsg struct {
		name   string
		enable bool
	}
	listenerToggledMsg struct {
		l   wire.Listener
		err error
	}
)

func listenersCmd(ctx context.Context, svc core.Service) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		ls, err := svc.Listeners(ctx)
		return listenersMsg{ls, err}
	}
}

func listenerEnableCmd(ctx context.Context, svc core.Service, name string, on bool) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		l, err := svc.ListenerEnable(ctx, name, on)
		return listenerToggledMsg{l, err}
	}
}

// updateListeners handles the listener messages; ok says msg was one.
func (m *Model) updateListeners(msg tea.Msg) (tea.Cmd, bool) {
	switch msg := msg.(type) {
	case listenersMsg:
		m.panel.listeners.set(msg.ls, msg.err)
	case listenerToggleMsg:
		return listenerEnableCmd(m.ctx, m.svc, msg.name, msg.enable), true
	case listenerToggledMsg:
		if msg.err != nil {
			m.status.notify(m.c.now, "listener: "+msg.err.Error(), true)
			return nil, true
		}
		m.panel.listeners.replace(msg.l)
		m.status.notify(m.c.now, "listener "+msg.l.Name+" "+msg.l.State, false)
	default:
		return nil, false
	}
	return nil, true
}

type listenersView struct {
	ls     []wire.Listener
	loaded bool
	err    string
	sel    int
	// selLine and selEnd are the selected listener's first and last line in the last
	// render, so the panel can scroll to keep it in view.
	selLine, selEnd int
}

// render is lines, noting where the selected listener is.
func (v *listenersView) render(c *common, w int) []string { return v.lines(c, w) }

// follow returns a scroll offset (from s) that shows the selected listener in h lines.
func (v *listenersView) follow(s, h int) int {
	if v.selEnd >= s+h {
		s = v.selEnd - h + 1
	}
	if v.selLine < s {
		s = v.selLine
	}
	return max(0, s)
}

func (v *listenersView) set(ls []wire.Listener, err error) {
	if err != nil {
		v.err = err.Error()
		return
	}
	v.ls, v.loaded, v.err = ls, true, ""
	v.sel = min(v.sel, max(0, len(ls)-1))
}

func (v *listenersView) replace(l wire.Listener) {
	for i := range v.ls {
		if v.ls[i].Name == l.Name {
			v.ls[i] = l
		}
	}
}

// key handles a key on this tab: selection and the enable toggle.
func (v *listenersView) key(c *common, k tea.KeyPressMsg) (tea.Cmd, bool) {
	km := c.keys.Panel
	switch {
	case km.Up.Matches(k):
		v.sel = max(0, v.sel-1)
	case km.Down.Matches(k):
		v.sel = min(max(0, len(v.ls)-1), v.sel+1)
	case k.String() == "e":
		if v.sel >= len(v.ls) {
			return nil, true
		}
		l := v.ls[v.sel]
		msg := listenerToggleMsg{name: l.Name, enable: l.State == "disabled"}
		return func() tea.Msg { return msg }, true
	default:
		return nil, false
	}
	return nil, true
}

func (v *listenersView) lines(c *common, w int) []string {
	st := &c.styles
	if v.err != "" {
		return []string{st.Error.Render(oneLine(v.err))}
	}
	if !v.loaded {
		return []string{st.Muted.Render("loading…")}
	}
	if len(v.ls) == 0 {
		return []string{st.Muted.Render("no listeners (~/.config/orcr/listeners/NAME.toml)")}
	}
	var out []string
	for i, l := range v.ls {
		start := len(out)
		out = append(out, v.listenerLines(c, w, l, i == v.sel)...)
		if i == v.sel {
			v.selLine, v.selEnd = start, len(out)-1
		}
	}
	out = append(out, "", st.Muted.Render("↑/↓ select · e enable/disable"))
	return out
}

// listenerLines is one listener: its head row, then its polls, limits and error.
func (v *listenersView) listenerLines(c *common, w int, l wire.Listener, selected bool) []string {
	st := &c.styles
	row := listenapi.Row(l, c.now)
	stateSt := st.Done
	switch {
	case l.State == "invalid" || l.Failures > 0:
		stateSt = st.Error
	case l.State == "disabled":
		stateSt = st.Muted
	}
	head := fit(l.Name, 14) + " " + stateSt.Render(fit(row[6], 12)) + " " + st.Muted.Render(row[1])
	var out []string
	if selected {
		out = append(out, st.Selected.Render(fit("▸ "+stripped(head), w)))
	} else {
		out = append(out, "  "+head)
	}
	if l.State == "invalid" {
		return append(out, "    "+st.Error.Render(oneLine(l.Error)))
	}
	out = append(out, "    "+st.Text.Render(fmt.Sprintf("last %s · next %s · fired %d · held %d", row[2], row[3], l.Fires, l.Held)))
	if len(l.RateLimits) > 0 {
		var rs []string
		full := false
		for _, r := range l.RateLimits {
			rs = append(rs, r.Text)
			full = full || r.NextAt != nil
		}
		rateSt := st.Muted
		if full {
			rateSt = st.GaugeWarn
		}
		out = append(out, "    "+rateSt.Render(strings.Join(rs, "; ")))
	}
	if l.LastError != "" {
		out = append(out, "    "+st.Error.Render(oneLine(l.LastError)))
	}
	return out
}

// stripped is s without styling, for a row drawn in the selection style.
func stripped(s string) string { return ansi.Strip(s) }
