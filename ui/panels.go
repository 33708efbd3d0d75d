package ui

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"orcr/core"
	"orcr/core/wire"
	schedapi "orcr/schedule/api"
)

// The side panel shows one of five small views, switched with the panel tab keys. Each
// view renders plain body lines; the panel frames them and handles scrolling.

type panelTab int

const (
	tabQueue panelTab = iota
	tabUsage
	tabSchedules
	tabEvents
	tabListeners
	tabNodes // shown only while the server has nodes
	nTabs
)

func (t panelTab) String() string {
	return [...]string{"queue", "usage", "schedules", "events", "listeners", "nodes"}[t]
}

// shown says whether tab t is in the strip: the nodes tab only while there are nodes.
func (p panelModel) shown(t panelTab) bool {
	return t != tabNodes || len(p.nodes.ns) > 0
}

// step is the next shown tab from the current one in direction d (±1).
func (p panelModel) step(d int) panelTab {
	t := p.tab
	for range nTabs {
		t = panelTab((int(t) + d + int(nTabs)) % int(nTabs))
		if p.shown(t) {
			return t
		}
	}
	return p.tab
}

// panelModel is the tabbed side panel.
type panelModel struct {
	c      *common
	w, h   int
	focus  bool
	tab    panelTab
	scroll [nTabs]int

	queue     queueView
	usage     usageView
	schedules schedulesView
	events    eventsView
	listeners listenersView
	nodes     nodesView
}

func newPanel(c *common) *panelModel {
	return &panelModel{c: c, events: eventsView{max: 500}}
}

// SetSize sets the pane's outer size.
func (p *panelModel) SetSize(w, h int) {
	p.w, p.h = w, h
	p.scroll[p.tab] = p.top()
}

// Update switches tabs and scrolls.
func (p *panelModel) Update(msg tea.Msg) tea.Cmd {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil
	}
	// The lines may have changed since the last key (a refresh, new events): scroll
	// from where the pane shows them, and keep the result in range.
	p.scroll[p.tab] = p.top()
	defer func() { p.scroll[p.tab] = p.top() }()
	if p.tab == tabListeners {
		if cmd, ok := p.listeners.key(p.c, k); ok {
			return cmd
		}
	}
	if p.tab == tabQueue {
		if cmd, ok := p.queue.key(p.c, k); ok {
			return cmd
		}
	}
	km := p.c.keys.Panel
	switch {
	case km.NextTab.Matches(k):
		p.tab = p.step(1)
	case km.PrevTab.Matches(k):
		p.tab = p.step(-1)
	case km.Up.Matches(k):
		p.scroll[p.tab] = max(0, p.scroll[p.tab]-1)
	case km.Down.Matches(k):
		p.scroll[p.tab]++
	}
	return nil
}

// lines is the active tab's body, and where its selection is (the listeners tab has
// one; first < 0 elsewhere).
func (p panelModel) lines() (lines []string, first, last int) {
	inner := p.w - 2
	switch p.tab {
	case tabQueue:
		lines = p.queue.lines(p.c, inner)
		if n := len(p.queue.q.Entries); n > 0 && p.focus {
			// The entries are the last lines; the selected one is kept in view.
			at := len(lines) - n + min(p.queue.sel, n-1)
			lines[at] = p.c.styles.Selected.Render(fit(ansi.Strip(lines[at]), inner))
			return lines, at, at
		}
	case tabUsage:
		lines = p.usage.lines(p.c, inner, p.queue.q.Entries)
	case tabSchedules:
		lines = p.schedules.lines(p.c, inner)
	case tabEvents:
		lines = p.events.lines(p.c, inner)
	case tabListeners:
		return p.listeners.lines(p.c, inner)
	case tabNodes:
		lines = p.nodes.lines(p.c, inner)
	}
	return lines, -1, -1
}

// top is the first line the active tab shows: its scroll, moved to show the selected
// listener, within the lines there are.
func (p panelModel) top() int {
	lines, first, last := p.lines()
	return p.window(len(lines), first, last)
}

func (p panelModel) window(n, first, last int) int {
	bh := max(0, p.h-2)
	s := p.scroll[p.tab]
	if first >= 0 {
		s = follow(s, bh, first, last)
	}
	return min(s, max(0, n-bh))
}

// View draws the tab strip as the frame title and the active view's lines.
func (p panelModel) View() string {
	lines, first, last := p.lines()
	lines = lines[p.window(len(lines), first, last):]
	var tabs []string
	for t := panelTab(0); t < nTabs; t++ {
		if !p.shown(t) {
			continue
		}
		if t == p.tab {
			tabs = append(tabs, "["+t.String()+"]")
		} else {
			tabs = append(tabs, t.String())
		}
	}
	strip := strings.Join(tabs, " ")
	if width(strip) > p.w-6 {
		// Too narrow for every tab: the active one, with its neighbours' direction.
		strip = "◂ [" + p.tab.String() + "] ▸"
	}
	return p.c.paneFrame(strip, lines, p.w, p.h, p.focus)
}

// gauge draws a bar of w cells filled to frac (0..1), coloured by level.
func gauge(c *common, frac float64, w int, hit bool) string {
	if w <= 0 {
		return ""
	}
	frac = min(max(frac, 0), 1)
	n := int(frac*float64(w) + 0.5)
	st := c.styles.GaugeOK
	switch {
	case hit || frac >= 0.95:
		st = c.styles.GaugeDanger
	case frac >= 0.75:
		st = c.styles.GaugeWarn
	}
	return st.Render(strings.Repeat("█", n)) + c.styles.GaugeEmpty.Render(strings.Repeat("░", w-n))
}

// ---- queue ----

type queueView struct {
	q      wire.QueueResult
	loaded bool
	err    string
	sel    int // the selected entry (x cancels it, + and - reprioritise it)
}

// queuePriorityMsg asks the root to move a queued agent's priority by `by`
// (queue.priority); the queue re-ranks it at once and is read again after.
type queuePriorityMsg struct {
	id, path string
	by       int
}

// queueCancelMsg asks the root to cancel a queued agent (agent.kill of its id: it
// never started, so nothing runs to stop).
type queueCancelMsg struct{ id, path string }

// key moves the selection over the queued entries, cancels the selected one, or
// raises or lowers its priority by one.
func (v *queueView) key(c *common, k tea.KeyPressMsg) (tea.Cmd, bool) {
	n := len(v.q.Entries)
	if n == 0 {
		return nil, false
	}
	km := c.keys.Panel
	switch {
	case km.Up.Matches(k):
		v.sel = max(0, min(v.sel, n-1)-1)
	case km.Down.Matches(k):
		v.sel = min(n-1, v.sel+1)
	case km.CancelQueued.Matches(k):
		e := v.q.Entries[min(v.sel, n-1)]
		msg := queueCancelMsg{id: e.AgentID, path: e.Path}
		return func() tea.Msg { return msg }, true
	case km.Raise.Matches(k), km.Lower.Matches(k):
		e := v.q.Entries[min(v.sel, n-1)]
		msg := queuePriorityMsg{id: e.AgentID, path: e.Path, by: 1}
		if km.Lower.Matches(k) {
			msg.by = -1
		}
		return func() tea.Msg { return msg }, true
	default:
		return nil, false
	}
	return nil, true
}

func (v *queueView) set(q wire.QueueResult, err error) {
	if err != nil {
		v.err = err.Error()
		return
	}
	// The selection follows its entry when the order changes (reprioritised, or one
	// ahead of it admitted), so + pressed twice moves the same agent twice.
	var selID string
	if n := len(v.q.Entries); n > 0 {
		selID = v.q.Entries[min(v.sel, n-1)].AgentID
	}
	v.q, v.loaded, v.err = q, true, ""
	for i, e := range q.Entries {
		if e.AgentID == selID {
			v.sel = i
		}
	}
}

func (v queueView) lines(c *common, w int) []string {
	st := &c.styles
	if v.err != "" {
		return []string{st.Error.Render(oneLine(v.err))}
	}
	if !v.loaded {
		return []string{st.Muted.Render("loading…")}
	}
	q := v.q
	capS := "∞"
	if q.Global > 0 {
		capS = fmt.Sprint(q.Global)
	}
	out := []string{st.Text.Render(fmt.Sprintf("running %d/%s", q.Total, capS)) +
		st.Muted.Render(fmt.Sprintf("  queued %d  free %d MB (min %d)", len(q.Entries), q.FreeMB, q.MinFreeMB))}
	if q.Global > 0 {
		out = append(out, fit("global   ", 9)+gauge(c, float64(q.Total)/float64(q.Global), min(20, w-20), q.Total >= q.Global))
	}
	provs := map[string]bool{}
	for p := range q.Caps {
		provs[p] = true
	}
	for p := range q.Running {
		provs[p] = true
	}
	names := make([]string, 0, len(provs))
	for p := range provs {
		names = append(names, p)
	}
	sort.Strings(names)
	for _, p := range names {
		run, cp := q.Running[p], q.Caps[p]
		if cp > 0 {
			out = append(out, fit(p, 9)+gauge(c, float64(run)/float64(cp), min(20, w-20), run >= cp)+st.Muted.Render(fmt.Sprintf(" %d/%d", run, cp)))
		} else {
			out = append(out, fit(p, 9)+st.Muted.Render(fmt.Sprintf("%d running, no cap", run)))
		}
	}
	for _, e := range q.Entries {
		out = append(out, st.Queued.Render(fmt.Sprintf("%2d ", e.Pos))+st.Text.Render(e.Path)+
			st.Muted.Render(fmt.Sprintf("  %s p%d  %s", e.Provider, e.Priority, e.Waiting)))
	}
	return out
}

// ---- usage ----

type usageView struct {
	u      wire.UsageResult
	loaded bool
	err    string
}

func (v *usageView) set(u wire.UsageResult, err error) {
	if err != nil {
		v.err = err.Error()
		return
	}
	v.u, v.loaded, v.err = u, true, ""
}

// lines draws the usage by provider; waiting is the queue, for what each window holds.
func (v usageView) lines(c *common, w int, waiting []wire.QueueEntry) []string {
	st := &c.styles
	if v.err != "" {
		return []string{st.Error.Render(oneLine(v.err))}
	}
	if !v.loaded {
		return []string{st.Muted.Render("loading…")}
	}
	type prov struct {
		readings []wire.LimitReading
		usage    core.Total
		accounts []string // the accounts agents ran on, from the usage rows
	}
	byP := map[string]*prov{}
	get := func(p string) *prov {
		if byP[p] == nil {
			byP[p] = &prov{}
		}
		return byP[p]
	}
	for _, r := range v.u.Rows {
		if r.Window != "total" && r.Window != "" {
			continue
		}
		p := get(r.Provider)
		p.usage.Add(core.TotalOf(r.Usage))
		if r.Account != "" && !slices.Contains(p.accounts, r.Account) {
			p.accounts = append(p.accounts, r.Account)
		}
	}
	for _, r := range v.u.Readings {
		p := get(r.Provider)
		p.readings = append(p.readings, r)
	}
	names := make([]string, 0, len(byP))
	for n := range byP {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return []string{st.Muted.Render("no usage recorded yet")}
	}
	gw := max(4, min(24, w-40))
	var out []string
	for _, n := range names {
		p := byP[n]
		out = append(out, st.Bold.Render(fit(n, 10))+st.Muted.Render("tokens "+p.usage.Tokens()+"  cost "+p.usage.Cost()))
		out = append(out, readingLines(c, p.readings, gw, waiting)...)
		out = append(out, unread(c, p.readings, p.accounts)...)
	}
	return out
}

// unread says "no readings yet" for each account agents ran on that has no limit
// reading (its CLI has not reported one), or once for a provider with no reading at
// all, so an empty gauge is not mistaken for an unused one.
func unread(c *common, rs []wire.LimitReading, accounts []string) []string {
	st := &c.styles
	if len(rs) == 0 && len(accounts) == 0 {
		return []string{"  " + st.Muted.Render("no readings yet")}
	}
	var out []string
	sort.Strings(accounts)
	for _, a := range accounts {
		if !slices.ContainsFunc(rs, func(r wire.LimitReading) bool { return r.Account == a }) {
			out = append(out, "  "+st.Bold.Render(a)+st.Muted.Render("  no readings yet"))
		}
	}
	return out
}

// ---- schedules ----

type schedulesView struct {
	s      []schedapi.Schedule
	loaded bool
	err    string
}

func (v *schedulesView) set(s []schedapi.Schedule, err error) {
	if err != nil {
		v.err = err.Error()
		return
	}
	v.s, v.loaded, v.err = s, true, ""
}

func (v schedulesView) lines(c *common, w int) []string {
	st := &c.styles
	if v.err != "" {
		return []string{st.Error.Render(oneLine(v.err))}
	}
	if !v.loaded {
		return []string{st.Muted.Render("loading…")}
	}
	if len(v.s) == 0 {
		return []string{st.Muted.Render("no schedules (orcr schedule add …)")}
	}
	var out []string
	for _, s := range v.s {
		cad := s.Cron
		if s.EverySeconds > 0 {
			cad = "every " + core.FormatAge(time.Duration(s.EverySeconds)*time.Second)
		}
		next := "next -"
		if s.NextAt != nil {
			next = "next " + s.NextAt.UTC().Format("15:04") + " (in " + core.FormatAge(s.NextAt.Sub(c.now)) + ")"
		}
		last := "never run"
		lastSt := st.Muted
		if r := s.LastRun; r != nil {
			last = "last " + r.StartedAt.UTC().Format("15:04")
			switch {
			case r.Error != "":
				last += " error"
				lastSt = st.Error
			case r.ExitCode == nil:
				last += " running"
			case *r.ExitCode != 0:
				last += fmt.Sprintf(" exit %d", *r.ExitCode)
				lastSt = st.Error
			default:
				last += " ok"
			}
		}
		out = append(out, st.Bold.Render(fit(s.Name, 14))+st.Muted.Render(fit(cad, 12)+" "+next+"  ")+lastSt.Render(last))
	}
	return out
}

// ---- events ----

// eventsView keeps the newest events in a bounded ring, newest first on screen.
type eventsView struct {
	max  int
	ring []wire.Event
	next int
}

func (v *eventsView) add(e wire.Event) {
	if len(v.ring) < v.max {
		v.ring = append(v.ring, e)
		return
	}
	v.ring[v.next] = e
	v.next = (v.next + 1) % v.max
}

func (v eventsView) newest(n int) []wire.Event {
	out := make([]wire.Event, 0, min(n, len(v.ring)))
	for i := 0; i < len(v.ring) && len(out) < n; i++ {
		j := (v.next - 1 - i + 2*len(v.ring)) % len(v.ring)
		out = append(out, v.ring[j])
	}
	return out
}

func (v eventsView) lines(c *common, w int) []string {
	st := &c.styles
	evs := v.newest(200)
	if len(evs) == 0 {
		return []string{st.Muted.Render("no events yet")}
	}
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		path := ""
		if e.Agent != nil {
			path = e.Agent.Path
		}
		what := strings.TrimPrefix(e.Event, "agent.")
		detail := ""
		if e.From != "" || e.To != "" {
			detail = string(e.From) + "→" + string(e.To)
		}
		if e.Rule != "" {
			detail += " (" + e.Rule + ")"
		}
		ts := st.Subtle.Render(e.At.UTC().Format("15:04:05") + " ")
		ws := st.Muted
		switch {
		case e.Agent != nil && e.To != "" && e.Agent.State == e.To:
			ws = c.agentStyle(e.Agent)
		case e.To != "":
			ws = c.stateStyle(e.To)
		}
		out = append(out, ts+ws.Render(fit(what, 8))+" "+st.Text.Render(path)+" "+st.Muted.Render(detail))
	}
	return out
}
