package ui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"orcr/core"
	webapi "orcr/web/api"
)

// webDialog shows the web gateway (DESIGN §15): where it serves (or why not), the
// open event streams, and each paired device — its name, scope, when it was last
// seen, whether it takes Web Push, its browser. It opens with what the root last
// read (web.status at start and on the minute's refresh) and asks again; the answer
// comes back as a webMsg the root hands it (set). Esc closes it.
type webDialog struct {
	size
	c      *common
	st     webapi.StatusResult
	loaded bool
	err    string
}

func (d *webDialog) Init() tea.Cmd { return nil }

func (d *webDialog) set(st webapi.StatusResult, err error) {
	if err != nil {
		d.err = err.Error()
		return
	}
	d.st, d.loaded, d.err = st, true, ""
}

func (d *webDialog) Update(msg tea.Msg) (tea.Cmd, action) {
	if k, ok := msg.(tea.KeyPressMsg); ok {
		if d.c.keys.Dialog.Cancel.Matches(k) || d.c.keys.Global.Web.Matches(k) || k.String() == "q" {
			return nil, closeAction{}
		}
	}
	return nil, nil
}

// lines is the dialog's body.
func (d webDialog) lines() []string {
	st := &d.c.styles
	var out []string
	if d.err != "" {
		out = append(out, st.Error.Render(oneLine(d.err)), "")
	}
	if !d.loaded {
		return append(out, st.Muted.Render("loading…"))
	}
	s := d.st
	switch {
	case s.Listen != "":
		out = append(out, st.Accent.Render("address ")+st.Text.Render(s.URL)+st.Muted.Render("  (listening on "+s.Listen+")"))
	case s.Error != "":
		out = append(out, st.Error.Render("not serving: "+oneLine(s.Error)))
	default:
		out = append(out, st.Muted.Render("off — start the server with --http 127.0.0.1:7070 or set [http] listen"))
	}
	out = append(out, st.Muted.Render(fmt.Sprintf("%s open · %s", plural(s.Clients, "stream", "streams"), plural(s.Tokens, "token", "tokens"))), "")
	if len(s.Devices) == 0 {
		out = append(out, st.Muted.Render("no paired devices — pair one: orcr web pair"))
	} else {
		out = append(out, st.Accent.Render(plural(len(s.Devices), "paired device", "paired devices")))
		out = append(out, st.Muted.Render(fit("name", 14)+" "+fit("scope", 5)+" "+fit("last seen", 12)+" "+fit("push", 4)+" browser"))
		for _, t := range s.Devices {
			seen := "never"
			if t.LastUsed != nil {
				seen = core.FormatAge(d.c.now.Sub(*t.LastUsed)) + " ago"
			}
			push := ""
			if t.Push {
				push = "on"
			}
			out = append(out, st.Text.Render(fit(t.Name, 14)+" "+fit(t.Scope, 5)+" "+fit(seen, 12)+" "+fit(push, 4)+" ")+
				st.Muted.Render(deviceName(t.Device)))
		}
	}
	return append(out, "", st.Subtle.Render("orcr web pair · orcr web token rm NAME · esc close"))
}

// deviceName shortens a browser's user agent to what tells devices apart: the
// browser and the platform ("Firefox · Android", "Chrome · X11"); an agent string it
// does not know is shown as it is.
func deviceName(ua string) string {
	ua = oneLine(ua)
	if ua == "" {
		return "?"
	}
	browser := ""
	for _, p := range []struct{ token, name string }{{"Firefox/", "Firefox"}, {"Edg/", "Edge"}, {"OPR/", "Opera"},
		{"HeadlessChrome/", "Chrome (headless)"}, {"CriOS/", "Chrome"}, {"Chrome/", "Chrome"}, {"Safari/", "Safari"}} {
		if strings.Contains(ua, p.token) {
			browser = p.name
			break
		}
	}
	platform := ""
	if i := strings.IndexByte(ua, '('); i >= 0 {
		if j := strings.IndexByte(ua[i:], ')'); j > 0 {
			inner := ua[i+1 : i+j]
			platform, _, _ = strings.Cut(inner, ";")
			if strings.Contains(inner, "Android") {
				platform = "Android"
			}
		}
	}
	if browser == "" || platform == "" {
		return ua
	}
	return browser + " · " + strings.TrimSpace(platform)
}

func (d webDialog) View() string {
	lines := d.lines()
	room := max(1, d.height-4)
	if len(lines) > room {
		lines = append(lines[:room-1], d.c.styles.Subtle.Render(fmt.Sprintf("… %d more", len(lines)-room+1)))
	}
	return dialogBox(d.c, "web", lines, d.width, d.height, 72)
}
