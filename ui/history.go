package ui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"orcr/core/wire"
	roleapi "orcr/roles/api"
)

// The history view (DESIGN §12 "History"): finished agents as `orcr history` lists
// them — role, duration, tokens, cost, result, path — newest first, over the dashboard
// like the plans view. The filter line takes the CLI's own arguments (`review/**
// --since 24h`) and the server filters, so both surfaces agree on what matches. Enter
// on an entry whose provider kept a session offers `orcr agent resume`: an optional
// first message, then agent.resume. Only the visible rows are drawn, so 10,000 entries
// scroll as fast as ten, and they are loaded a page at a time as the selection nears
// the last one loaded. Like every dialog it does no I/O: calls go out as callActions.

type (
	// historyMsg is one history.list answer; seq says which request it answers, so a
	// slow answer to an older filter never replaces a newer one.
	historyMsg struct {
		seq   int
		after string // set when the answer is a page that goes on after the entries shown
		res   roleapi.AgentHistoryResult
		err   error
		took  time.Duration // how long the call took, which paces the refreshes
	}
	// historyTickMsg re-reads the history while the view is open and agents ended.
	historyTickMsg struct {
		d   *historyDialog // which view: a closed one's tick must not drive a new one
		gen int
	}
	// resumedMsg answers a resume from the history view: the new record, or why not.
	resumedMsg struct {
		from  roleapi.AgentHistoryEntry
		agent wire.Agent
		err   error
	}
)

// historyRefresh is how often the open view re-reads the history when agents ended
// since it last did — never when nothing ended, and never more than 1/historyShare
// of the time: 10,000 entries over the socket take 70–180 ms to fetch and decode.
const (
	historyRefresh = 3 * time.Second
	historyShare   = 20
)

// historyChunk is how many entries one history.list of the view asks for: the first
// page draws at once at any history length, and the next is asked for when the
// selection comes within historyAhead pages of the last entry loaded.
const (
	historyChunk = 500
	historyAhead = 2
)

type historyMode int

const (
	historyList historyMode = iota
	historyFilter
	historyResume
)

// historyDialog is the history view.
type historyDialog struct {
	size
	c       *common
	mode    historyMode
	entries []roleapi.AgentHistoryEntry
	params  roleapi.AgentHistoryParams // the filter the entries answer
	filter  string                     // that filter as typed
	loaded  bool
	err     string
	notice  string
	sel     int
	offset  int // first shown entry
	seq     int // the newest history.list asked for
	gen     int // refresh chain generation
	every   time.Duration
	stale   bool
	in      textinput.Model // the filter line or the resume message
	next    string          // the cursor after the last loaded entry ("" when it is the oldest)
	more    string          // the cursor of the page asked for and not answered yet
}

func newHistoryDialog(c *common) *historyDialog {
	d := &historyDialog{c: c, every: historyRefresh}
	d.in = textinput.New()
	d.in.Prompt = "› "
	d.in.SetWidth(72) // the line is cut to the view's width when drawn
	return d
}

// openHistory opens the view and asks for the first page of the history.
func (m *Model) openHistory() tea.Cmd {
	d := newHistoryDialog(m.c)
	return tea.Batch(m.pushDialog(d), m.updateAction(d.load()))
}

func (d *historyDialog) Init() tea.Cmd { return d.tick() }

func (d *historyDialog) tick() tea.Cmd {
	d.gen++
	gen := d.gen
	return tea.Tick(d.every, func(time.Time) tea.Msg { return historyTickMsg{d, gen} })
}

// load asks for the history under the current filter: as many entries as are loaded
// (a refresh keeps what the user scrolled through), at least a first page.
func (d *historyDialog) load() action {
	d.seq++
	seq, p := d.seq, d.params
	p.Limit = max(historyChunk, len(d.entries))
	d.stale, d.more = false, ""
	return callAction{func(ctx context.Context, svc wire.Transport) tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		start := time.Now()
		r, err := wire.Call(ctx, svc, roleapi.AgentHistory, p)
		return historyMsg{seq, "", r, err, time.Since(start)}
	}}
}

// loadMore asks for the page after the loaded entries once the selection comes near
// their end, unless that page is asked for already or there is none.
func (d *historyDialog) loadMore() action {
	if d.next == "" || d.more == d.next || !d.loaded || d.sel < len(d.entries)-historyAhead*d.page() {
		return nil
	}
	seq, p := d.seq, d.params
	p.Limit, p.After, d.more = historyChunk, d.next, d.next
	return callAction{func(ctx context.Context, svc wire.Transport) tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		start := time.Now()
		r, err := wire.Call(ctx, svc, roleapi.AgentHistory, p)
		return historyMsg{seq, p.After, r, err, time.Since(start)}
	}}
}

// follow is told of every agent change while the view is open: an agent that ended
// belongs in the history at the next refresh.
func (d *historyDialog) follow(a wire.Agent) {
	if a.State.Terminal() {
		d.stale = true
	}
}

func (d historyDialog) current() (roleapi.AgentHistoryEntry, bool) {
	if d.sel < 0 || d.sel >= len(d.entries) {
		return roleapi.AgentHistoryEntry{}, false
	}
	return d.entries[d.sel], true
}

func (d *historyDialog) SetSize(w, h int) {
	d.size.SetSize(w, h)
	d.scrollTo()
}

func (d *historyDialog) Update(msg tea.Msg) (tea.Cmd, action) {
	cmd, act := d.update(msg)
	d.scrollTo() // the page follows the selection, the list and the lines under it
	if act == nil {
		act = d.loadMore()
	}
	return cmd, act
}

func (d *historyDialog) update(msg tea.Msg) (tea.Cmd, action) {
	switch msg := msg.(type) {
	case historyMsg:
		d.set(msg)
	case historyTickMsg:
		if msg.d != d || msg.gen != d.gen {
			return nil, nil
		}
		if d.stale && d.mode == historyList {
			return d.tick(), d.load()
		}
		return d.tick(), nil
	case resumedMsg: // only failures come here; the root takes a success
		d.mode = historyList
		d.notice = d.c.styles.Error.Render("resume: " + oneLine(msg.err.Error()))
	case tea.KeyPressMsg:
		return d.key(msg)
	default:
		if d.mode != historyList {
			var cmd tea.Cmd
			d.in, cmd = d.in.Update(msg)
			return cmd, nil
		}
	}
	return nil, nil
}

func (d *historyDialog) set(msg historyMsg) {
	if msg.seq != d.seq {
		return
	}
	if msg.after != "" {
		// A next page: it goes after the entries shown only if they are still the
		// ones it continues (no refresh replaced them meanwhile).
		if msg.after != d.more || msg.after != d.next {
			return
		}
		d.more = ""
		if msg.err != nil {
			d.notice = d.c.styles.Error.Render("history: " + oneLine(msg.err.Error()))
			return
		}
		d.entries, d.next = append(d.entries, msg.res.Entries...), msg.res.Next
		return
	}
	d.every = max(historyRefresh, historyShare*msg.took)
	if msg.err != nil {
		d.err = msg.err.Error()
		return
	}
	d.next = msg.res.Next
	id := ""
	if e, ok := d.current(); ok {
		id = e.ID
	}
	d.entries, d.loaded, d.err = msg.res.Entries, true, ""
	// Keep the selection on its entry when it is still listed; new entries come first.
	d.sel = min(d.sel, max(0, len(d.entries)-1))
	for i := range d.entries {
		if d.entries[i].ID == id {
			d.sel = i
			break
		}
	}
}

func (d *historyDialog) key(k tea.KeyPressMsg) (tea.Cmd, action) {
	dk := d.c.keys.Dialog
	if d.mode != historyList {
		switch {
		case dk.Cancel.Matches(k):
			d.mode = historyList
			return nil, nil
		case dk.Submit.Matches(k):
			return d.submit()
		}
		var cmd tea.Cmd
		d.in, cmd = d.in.Update(k)
		return cmd, nil
	}
	hk, tk := d.c.keys.History, d.c.keys.Tree
	switch {
	case dk.Cancel.Matches(k):
		return nil, closeAction{}
	case hk.Refresh.Matches(k):
		return nil, d.load()
	case hk.Filter.Matches(k):
		d.mode, d.notice = historyFilter, ""
		d.in.Placeholder = "GLOB --since D   e.g. review/** --since 24h"
		d.in.SetValue(d.filter)
		d.in.CursorEnd()
		return d.in.Focus(), nil
	case hk.Resume.Matches(k):
		return d.offerResume()
	case tk.Up.Matches(k):
		d.move(-1)
	case tk.Down.Matches(k):
		d.move(1)
	case tk.PageUp.Matches(k) || k.String() == "ctrl+u":
		d.move(-max(1, d.page()-1))
	case tk.PageDown.Matches(k) || k.String() == "ctrl+d":
		d.move(max(1, d.page()-1))
	case tk.Top.Matches(k):
		d.move(-len(d.entries))
	case tk.Bottom.Matches(k):
		d.move(len(d.entries))
	}
	return nil, nil
}

func (d *historyDialog) move(n int) {
	d.sel = min(max(d.sel+n, 0), max(0, len(d.entries)-1))
}

// page is how many entries the view has room for: its height less the frame, the
// blank first line, the header, the hints and the lines shown under the entries.
func (d historyDialog) page() int {
	room := d.height - 6
	if d.notice != "" {
		room -= 2
	}
	if d.mode != historyList {
		room -= 3
	}
	return max(1, room)
}

// scrollTo keeps the selection inside the shown page.
func (d *historyDialog) scrollTo() {
	page := d.page()
	if d.sel < d.offset {
		d.offset = d.sel
	}
	if d.sel >= d.offset+page {
		d.offset = d.sel - page + 1
	}
	d.offset = max(0, min(d.offset, len(d.entries)-page))
}

// offerResume opens the first-message line for the selected entry, or says why it
// cannot be resumed.
func (d *historyDialog) offerResume() (tea.Cmd, action) {
	e, ok := d.current()
	if !ok {
		return nil, nil
	}
	if !e.Resumable {
		why := "its " + e.Provider + " never reported a session id"
		if e.Provider == "shell" {
			why = "the shell provider keeps no session"
		}
		d.notice = d.c.styles.Error.Render(e.Path + " cannot be resumed: " + why + "; start it anew with orcr agent run")
		return nil, nil
	}
	d.mode, d.notice = historyResume, ""
	d.in.Placeholder = "first message (optional); enter resumes"
	d.in.SetValue("")
	return d.in.Focus(), nil
}

// submit applies the filter line or sends the resume.
func (d *historyDialog) submit() (tea.Cmd, action) {
	text := strings.TrimSpace(d.in.Value())
	if d.mode == historyResume {
		e, _ := d.current()
		d.notice = "resuming " + e.Path + "…"
		d.mode = historyList
		return nil, resumeAction{e, wire.ResumeParams{Target: e.ID, Prompt: text}}
	}
	p, err := parseHistoryFilter(text)
	if err != nil {
		d.notice = d.c.styles.Error.Render(oneLine(err.Error()))
		return nil, nil
	}
	d.mode, d.filter, d.params, d.notice = historyList, text, p, ""
	d.sel, d.offset = 0, 0
	return nil, d.load()
}

// resumeAction asks the root for agent.resume of an entry (resumeEntryCmd).
type resumeAction struct {
	from roleapi.AgentHistoryEntry
	p    wire.ResumeParams
}

// parseHistoryFilter reads the filter line as `orcr history` reads its arguments: an
// optional GLOB and --since D (D a Go duration or Nd).
func parseHistoryFilter(s string) (roleapi.AgentHistoryParams, error) {
	var p roleapi.AgentHistoryParams
	words, err := splitWords(s)
	if err != nil {
		return p, err
	}
	for i := 0; i < len(words); i++ {
		w := words[i]
		since, isSince := strings.CutPrefix(w, "--since=")
		switch {
		case w == "--since" || w == "-since":
			if i+1 >= len(words) {
				return p, fmt.Errorf("--since needs a duration such as 24h or 7d")
			}
			i++
			since, isSince = words[i], true
		case strings.HasPrefix(w, "-") && !isSince:
			return p, fmt.Errorf("unknown flag %s: the filter takes GLOB and --since D", w)
		}
		if isSince {
			d, err := roleapi.ParseSince(since)
			if err != nil {
				return p, err
			}
			p.SinceSeconds = int(d / time.Second)
			continue
		}
		if p.Glob != "" {
			return p, fmt.Errorf("one glob at most (got %s and %s)", p.Glob, w)
		}
		p.Glob = w
	}
	return p, nil
}

// historyCols are the widths of the view's columns (0: not shown), each with its
// separating space. ended, path and result always show; the others drop, least
// telling first, as the view narrows.
type historyCols struct{ ended, path, role, provider, model, duration, tokens, cost, result int }

func layoutHistory(w int) historyCols {
	c := historyCols{ended: 9}
	const minPath, minResult = 16, 12
	rest := w - 2 - c.ended - minPath - minResult // 2: the selection mark and the resumable mark
	for _, col := range []struct {
		p *int
		n int
	}{{&c.role, 13}, {&c.tokens, 7}, {&c.cost, 8}, {&c.duration, 10}, {&c.provider, 9}, {&c.model, 17}} {
		if rest >= col.n {
			*col.p = col.n
			rest -= col.n
		}
	}
	rest = max(0, rest)
	// What is left goes to the path first (up to 48), then to the result.
	c.path = minPath + min(rest, 32)
	c.result = max(1, w-2-c.ended-c.path-c.role-c.provider-c.model-c.duration-c.tokens-c.cost)
	return c
}

func (d historyDialog) View() string {
	w, h := d.width, d.height
	st := &d.c.styles
	inner := w - 4
	title := "history"
	if d.filter != "" {
		title += " · " + d.filter
	}
	var lines []string
	switch {
	case d.err != "":
		lines = []string{st.Error.Render(oneLine(d.err))}
	case !d.loaded:
		lines = []string{st.Muted.Render("loading…")}
	case len(d.entries) == 0:
		msg := "no finished agents yet"
		if d.filter != "" {
			msg = "no finished agents match " + d.filter
		}
		lines = []string{st.Muted.Render(msg)}
	default:
		lines = d.rows(inner)
	}
	switch d.mode {
	case historyFilter:
		lines = append(lines, "", st.Accent.Render("filter")+st.Muted.Render(" (as orcr history takes it)"), d.in.View())
	case historyResume:
		e, _ := d.current()
		lines = append(lines, "", st.Accent.Render("resume "+e.Path)+st.Muted.Render(" — same session and folder, as orcr agent resume"), d.in.View())
	}
	if d.notice != "" {
		lines = append(lines, "", d.notice)
	}
	lines = append(lines, "", st.Subtle.Render(d.hints()))
	body := make([]string, 0, len(lines)+1)
	body = append(body, "")
	for _, l := range lines {
		body = append(body, " "+l)
	}
	if len(body) > h-2 {
		body = append(body[:max(0, h-3)], body[len(body)-1])
	}
	return d.c.frame(&st.DialogBorder, &st.DialogTitle, title, body, w, h)
}

// rows is the header and the page of entries from offset.
func (d historyDialog) rows(w int) []string {
	c := d.c
	st := &c.styles
	cols := layoutHistory(w)
	var hb strings.Builder
	cell := func(b *strings.Builder, s string, cw int, right bool) {
		if cw == 0 {
			return
		}
		if right {
			b.WriteString(fitRight(s, cw-1))
		} else {
			b.WriteString(fit(s, cw-1))
		}
		b.WriteByte(' ')
	}
	hc := roleapi.HistoryColumns
	hb.WriteString("  ")
	cell(&hb, hc[0], cols.ended, false)
	cell(&hb, hc[1], cols.path, false)
	cell(&hb, hc[2], cols.role, false)
	cell(&hb, hc[3], cols.provider, false)
	cell(&hb, hc[4], cols.model, false)
	cell(&hb, hc[5], cols.duration, true)
	cell(&hb, hc[6], cols.tokens, true)
	cell(&hb, hc[7], cols.cost, true)
	hb.WriteString(hc[8])
	out := make([]string, 0, d.page()+1)
	out = append(out, c.p(&st.Muted, fit(hb.String(), w)))
	end := min(len(d.entries), d.offset+d.page())
	for i := d.offset; i < end; i++ {
		e := &d.entries[i]
		r := roleapi.HistoryRow(*e, c.now)
		var left, right strings.Builder
		cell(&left, r[0], cols.ended, false)
		cell(&left, r[1], cols.path, false)
		cell(&right, r[2], cols.role, false)
		cell(&right, r[3], cols.provider, false)
		cell(&right, r[4], cols.model, false)
		cell(&right, r[5], cols.duration, true)
		cell(&right, r[6], cols.tokens, true)
		cell(&right, r[7], cols.cost, true)
		res := fit(r[8], cols.result)
		mark := " "
		if e.Resumable {
			mark = "↻"
		}
		if i == d.sel {
			out = append(out, c.p(&st.Selected, fit("›"+mark+left.String()+right.String()+res, w)))
			continue
		}
		out = append(out, " "+c.p(&st.Accent, mark)+c.p(&st.Text, left.String())+c.p(&st.Muted, right.String())+
			c.p(d.resultStyle(e), res))
	}
	return out
}

// resultStyle colours a result as the tree colours the state: failures (and non-zero
// exits) as lost, kills as exited, a clean end as done.
func (d historyDialog) resultStyle(e *roleapi.AgentHistoryEntry) *lipgloss.Style {
	switch {
	case e.State == wire.StateFailed || e.State == wire.StateLost ||
		e.State == wire.StateExited && e.Result != "exit 0" && strings.HasPrefix(e.Result, "exit "):
		return d.c.groupStylePtr(gLost)
	case e.State == wire.StateExited:
		return d.c.groupStylePtr(gDone)
	}
	return d.c.groupStylePtr(gExited)
}

func (d historyDialog) hints() string {
	hk, dk := d.c.keys.History, d.c.keys.Dialog
	switch d.mode {
	case historyFilter:
		return dk.Submit.Label() + " apply (empty: everything) · " + dk.Cancel.Label() + " back"
	case historyResume:
		return dk.Submit.Label() + " resume · " + dk.Cancel.Label() + " back"
	}
	pos := ""
	if n := len(d.entries); n > 0 {
		more := ""
		if d.next != "" {
			more = "+" // more entries than loaded: they come as the selection nears them
		}
		pos = fmt.Sprintf("%d/%d%s · ", d.sel+1, n, more)
	}
	return pos + fmt.Sprintf("↻ resumable · %s resume · %s filter · %s refresh · %s close",
		hk.Resume.Label(), hk.Filter.Label(), hk.Refresh.Label(), dk.Cancel.Label())
}
