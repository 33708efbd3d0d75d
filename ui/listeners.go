package ui

import (
	"context"
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"orcr/core/wire"
	listenapi "orcr/listen/api"
)

// The listeners tab of the side panel (DESIGN §11): each listener's state, last and
// next poll, fires, held events, last error and rate-limit standing. With the panel
// focused on this tab, up/down select a listener and e enables or disables it. Like
// the other panels it is re-read on the refresh tick; Update only asks for the call.

type (
	listenersMsg struct {
		ls  []listenapi.Listener
		err error
	}
	// listenerToggleMsg asks the root model to enable or disable a listener.
	listenerToggleMsg struct {
		name   string
		enable bool
	}
	listenerToggledMsg struct {
		l   listenapi.Listener
		err error
	}
)

func listenersCmd(ctx context.Context, svc wire.Transport) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		lsRes, err := wire.Call(ctx, svc, listenapi.ListenerList, wire.Empty{})
		ls := lsRes.Listeners
		return listenersMsg{ls, err}
	}
}

func listenerEnableCmd(ctx context.Context, svc wire.Transport, name string, on bool) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		lRes, err := wire.Call(ctx, svc, listenapi.ListenerEnable, listenapi.ListenerEnableParams{Name: name, Enabled: &on})
		l := lRes.Listener
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
	ls     []listenapi.Listener
	loaded bool
	err    string
	sel    int
}

// follow returns a scroll offset (from s) that shows lines first..last in h lines.
func follow(s, h, first, last int) int {
	if last >= s+h {
		s = last - h + 1
	}
	if first < s {
		s = first
	}
	return max(0, s)
}

func (v *listenersView) set(ls []listenapi.Listener, err error) {
	if err != nil {
		v.err = err.Error()
		return
	}
	v.ls, v.loaded, v.err = ls, true, ""
	v.sel = min(v.sel, max(0, len(ls)-1))
}

func (v *listenersView) replace(l listenapi.Listener) {
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

// lines draws the listeners, and says which lines the selected one takes (first < 0
// when none is shown), so the panel can scroll to keep it in view.
func (v listenersView) lines(c *common, w int) (out []string, first, last int) {
	st := &c.styles
	if v.err != "" {
		return []string{st.Error.Render(oneLine(v.err))}, -1, -1
	}
	if !v.loaded {
		return []string{st.Muted.Render("loading…")}, -1, -1
	}
	if len(v.ls) == 0 {
		return []string{st.Muted.Render("no listeners (~/.config/orcr/listeners/NAME.toml)")}, -1, -1
	}
	first, last = -1, -1
	for i, l := range v.ls {
		start := len(out)
		out = append(out, v.listenerLines(c, w, l, i == v.sel)...)
		if i == v.sel {
			first, last = start, len(out)-1
		}
	}
	out = append(out, "", st.Muted.Render("↑/↓ select · e enable/disable"))
	return out, first, last
}

// listenerLines is one listener: its head row, then its polls, limits and error.
func (v listenersView) listenerLines(c *common, w int, l listenapi.Listener, selected bool) []string {
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
