package ui

import (
	"context"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"orcr/core/wire"
)

// diffMsg is one agent.diff answer; seq says which request of the dialog it answers.
type diffMsg struct {
	d   *diffDialog
	seq int
	res wire.DiffResult
	err error
}

// diffDialog shows what an agent changed in its working tree (`git diff` against its
// base, computed by the server: agent.diff), coloured like `git diff` colours it,
// scrolled with the arrows, pgup/pgdn and home/end; ctrl+r diffs again.
type diffDialog struct {
	size
	c      *common
	id     string
	path   string
	seq    int
	loaded bool
	res    wire.DiffResult
	err    string
	lines  []string // the diff's text, sanitised, one entry a line
	scroll int
}

func newDiffDialog(c *common, a *wire.Agent) *diffDialog {
	return &diffDialog{c: c, id: a.ID, path: a.Path}
}

func (d *diffDialog) Init() tea.Cmd { return nil }

// load asks the server for the diff again; the answer comes back as a diffMsg.
func (d *diffDialog) load() action {
	d.seq++
	seq, id := d.seq, d.id
	return callAction{func(ctx context.Context, svc wire.Transport) tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		r, err := wire.Call(ctx, svc, wire.AgentDiff, wire.DiffParams{Target: id})
		return diffMsg{d, seq, r, err}
	}}
}

func (d *diffDialog) SetSize(w, h int) {
	d.size.SetSize(w, h)
	d.clamp()
}

// room is how many diff lines the box shows.
func (d diffDialog) room() int { return max(1, d.height-5) }

func (d *diffDialog) clamp() {
	d.scroll = max(0, min(d.scroll, len(d.lines)-d.room()))
}

func (d *diffDialog) Update(msg tea.Msg) (tea.Cmd, action) {
	switch msg := msg.(type) {
	case diffMsg:
		if msg.d != d || msg.seq != d.seq {
			return nil, nil
		}
		d.loaded = true
		if msg.err != nil {
			d.err, d.lines = msg.err.Error(), nil
			return nil, nil
		}
		d.err, d.res = "", msg.res
		d.lines = diffLines(msg.res)
		d.clamp()
	case tea.KeyPressMsg:
		return d.key(msg)
	}
	return nil, nil
}

func (d *diffDialog) key(k tea.KeyPressMsg) (tea.Cmd, action) {
	kt, kp := d.c.keys.Tree, d.c.keys.Panel
	page := max(1, d.room()-1)
	switch {
	case d.c.keys.Dialog.Cancel.Matches(k) || k.String() == "q" || kt.Diff.Matches(k):
		return nil, closeAction{}
	case k.String() == "ctrl+r":
		return nil, d.load()
	case kt.Down.Matches(k) || kp.Down.Matches(k):
		d.scroll++
	case kt.Up.Matches(k) || kp.Up.Matches(k):
		d.scroll--
	case kt.PageDown.Matches(k) || kp.PageDown.Matches(k) || k.String() == "space":
		d.scroll += page
	case kt.PageUp.Matches(k) || kp.PageUp.Matches(k):
		d.scroll -= page
	case kt.Top.Matches(k):
		d.scroll = 0
	case kt.Bottom.Matches(k):
		d.scroll = len(d.lines)
	}
	d.clamp()
	return nil, nil
}

// diffLines turns agent.diff's answer into the lines the dialog shows: the diff's text
// made safe (a file's content may hold escape sequences), then the untracked files,
// then a note when the server cut the diff short.
func diffLines(r wire.DiffResult) []string {
	var out []string
	if r.Text != "" {
		out = strings.Split(strings.TrimRight(sanitize(r.Text), "\n"), "\n")
	}
	for _, f := range r.Untracked {
		out = append(out, "?? "+sanitize(f))
	}
	if r.Truncated {
		out = append(out, fmt.Sprintf("… cut short: see git -C %s diff %s", r.Dir, short(r.Base)))
	}
	return out
}

func short(sha string) string { return sha[:min(len(sha), 12)] }

// paintDiff colours one line of a diff as git does: files bold, hunks in the accent,
// additions green, removals red, untracked files muted.
func (d diffDialog) paintDiff(l string, w int) string {
	st := &d.c.styles
	s := fit(l, w)
	switch {
	case strings.HasPrefix(l, "diff --git"), strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "),
		strings.HasPrefix(l, "index "), strings.HasPrefix(l, "new file"), strings.HasPrefix(l, "deleted file"):
		return d.c.p(&st.Bold, s)
	case strings.HasPrefix(l, "@@"):
		return d.c.p(&st.Accent, s)
	case strings.HasPrefix(l, "+"):
		return d.c.p(&st.GaugeOK, s)
	case strings.HasPrefix(l, "-"):
		return d.c.p(&st.Error, s)
	case strings.HasPrefix(l, "?? "), strings.HasPrefix(l, "… cut short"):
		return d.c.p(&st.Muted, s)
	}
	return d.c.p(&st.Text, s)
}

func (d diffDialog) View() string {
	st := &d.c.styles
	inner := max(1, d.width-4)
	room := d.room()
	var body []string
	switch {
	case !d.loaded:
		body = append(body, st.Muted.Render("diffing "+d.path+"…"))
	case d.err != "":
		body = append(body, st.Error.Render(fit("diff: "+oneLine(d.err), inner)))
	case len(d.lines) == 0:
		body = append(body, st.Muted.Render(fit(fmt.Sprintf("no changes in %s against %s (%s)", d.res.Dir, d.res.BaseName, short(d.res.Base)), inner)))
	default:
		top := max(0, min(d.scroll, len(d.lines)-room))
		for _, l := range d.lines[top:min(len(d.lines), top+room)] {
			body = append(body, d.paintDiff(l, inner))
		}
	}
	for len(body) < room {
		body = append(body, "")
	}
	hint := "↑↓ pgup/pgdn scroll · ctrl+r again · esc close"
	if n := len(d.lines); n > room {
		hint = fmt.Sprintf("lines %d–%d of %d · ", min(d.scroll, n-room)+1, min(n, min(d.scroll, n-room)+room), n) + hint
	}
	body = append(body, st.Subtle.Render(fit(hint, inner)))
	title := "diff " + d.path
	if d.loaded && d.err == "" {
		title += " against " + d.res.BaseName + " " + short(d.res.Base)
	}
	return dialogBox(d.c, title, body, d.width, d.height, d.width)
}

// openDiff opens the diff view of agent a and asks the server for its diff.
func (m *Model) openDiff(a *wire.Agent) tea.Cmd {
	d := newDiffDialog(m.c, a)
	return tea.Batch(m.pushDialog(d), m.updateAction(d.load()))
}
