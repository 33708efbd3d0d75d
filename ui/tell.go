package ui

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"

	"orcr/core/wire"
	planapi "orcr/orchestrate/api"
	runapi "orcr/orchestrate/run/api"
)

// Being told: when an agent blocks, a plan is drafted, or a run asks or fails, the
// dashboard rings the bell and shows a desktop notification — through notify-send
// when the desktop has it, else through the terminal (OSC 9, or OSC 777 on the
// terminals that speak it). Each kind can be turned off under [notify] in
// config.toml. Only live events tell (not the replay of the past on connect), and
// each event at most once: a high-water mark of the sequence numbers told survives
// reconnects, whose re-read could otherwise deliver an event again.

// Notification kinds, as [notify] names them.
const (
	NotifyBlocked     = "blocked"
	NotifyPlanDrafted = "plan_drafted"
	NotifyRunAsks     = "run_asks"
	NotifyRunFailed   = "run_failed"
)

// NotifyOptions say how the dashboard tells the operator (config [notify]). The zero
// value tells every kind with the bell and a desktop notification through the terminal.
type NotifyOptions struct {
	Off       map[string]bool // kinds turned off
	NoBell    bool
	NoDesktop bool
	// NotifySend is notify-send's path when a desktop session can show it; "" sends
	// the terminal's own notification sequence instead.
	NotifySend string
	// OSC is "777" for terminals that take OSC 777 notifications (VTE, foot, urxvt,
	// wezterm); anything else sends OSC 9.
	OSC string
}

// telling is one thing to tell.
type telling struct {
	kind, title, body string
}

// tellingOf is what event ev tells, if it is of a kind that tells and live.
func (m *Model) tellingOf(ev wire.Event) (telling, bool) {
	if ev.Seq <= m.info.LastSeq || ev.Seq <= m.toldSeq {
		return telling{}, false // the replay of the past, or told already
	}
	var t telling
	switch ev.Event {
	case planapi.EventPlanState:
		if dataString(ev.Data, "state") != "drafted" || dataString(ev.Data, "from") == "drafted" {
			return t, false
		}
		name := dataString(ev.Data, "name")
		t = telling{NotifyPlanDrafted, "plan " + name + " is drafted", "review it: orcr plan show " + name}
	case runapi.EventRunNotify:
		kind := NotifyRunAsks
		run := dataString(ev.Data, "run")
		text := strings.TrimPrefix(dataString(ev.Data, "text"), "run "+run+": ")
		if strings.Contains(text, "fail") {
			kind = NotifyRunFailed
		}
		t = telling{kind, "run " + strings.TrimSpace(run+" "+dataString(ev.Data, "m")), text}
	case runapi.EventRun:
		if dataString(ev.Data, "type") != "fact" || dataString(ev.Data, "kind") != "ask" {
			return t, false
		}
		t = telling{NotifyRunAsks, "run " + dataString(ev.Data, "run") + " " + dataString(ev.Data, "m") + " asks", dataString(ev.Data, "text")}
	default:
		return t, false
	}
	if m.opts.Notify.Off[t.kind] {
		return t, false
	}
	return t, true
}

// blockedTelling is what an agent that just became blocked tells.
func blockedTelling(a wire.Agent) telling {
	why := ""
	if b := a.Blocked; b != nil {
		why = b.Question
		if why == "" {
			why = b.Detail
		}
	}
	return telling{NotifyBlocked, a.Path + " is blocked", why}
}

// tell rings the bell once for a batch and shows one desktop notification for it
// (the first thing, with a count of the others). It prints through the renderer or
// runs notify-send in a command, so Update itself does no I/O.
func (m *Model) tell(ts []telling) tea.Cmd {
	if len(ts) == 0 {
		return nil
	}
	var cmds []tea.Cmd
	if !m.opts.Notify.NoBell {
		cmds = append(cmds, tea.Raw(bell))
	}
	if !m.opts.Notify.NoDesktop {
		title, body := "orcr: "+ts[0].title, ts[0].body
		if len(ts) > 1 {
			body = strings.TrimSpace(body + fmt.Sprintf(" (and %d more)", len(ts)-1))
		}
		cmds = append(cmds, desktopCmd(m.ctx, m.opts.Notify, title, body))
	}
	return tea.Batch(cmds...)
}

// desktopCmd shows one desktop notification.
func desktopCmd(ctx context.Context, o NotifyOptions, title, body string) tea.Cmd {
	if o.NotifySend == "" {
		return tea.Raw(oscNotify(o.OSC, title, body))
	}
	path := o.NotifySend
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, path, "--app-name=orcr", title, body).CombinedOutput()
		if err != nil {
			return notifyFailedMsg{fmt.Errorf("notify-send: %w: %s", err, strings.TrimSpace(string(out)))}
		}
		return nil
	}
}

// notifyFailedMsg says notify-send failed; the dashboard logs it and falls back to the
// terminal's notification from then on.
type notifyFailedMsg struct{ err error }

// oscNotify is the terminal's notification sequence: OSC 777 (title and body) or
// OSC 9 (one line), with the control characters that would end it early removed.
func oscNotify(osc, title, body string) string {
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r < 0x20 || r == 0x7f || r == ';' && osc == "777" {
				return ' '
			}
			return r
		}, s)
	}
	if osc == "777" {
		return "\x1b]777;notify;" + clean(title) + ";" + clean(body) + "\x07"
	}
	text := title
	if body != "" {
		text += ": " + body
	}
	return "\x1b]9;" + clean(text) + "\x07"
}
