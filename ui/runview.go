package ui

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"orcr/core"

	runapi "orcr/orchestrate/run/api"
)

// Drawing the runs view: the list, one run (header, milestone rows, the selected
// milestone in full, the pool, the lead's inbox, the log's tail) and the summary.

// Round limits (DESIGN §8): checks ≤ 3 rounds, review ≤ 2, conflict ≤ 2.
const checkRounds, reviewRounds, conflictRounds = 3, 2, 2

func (d *runsDialog) Update(msg tea.Msg) (tea.Cmd, action) {
	cmd, act := d.update(msg)
	d.layout()
	return cmd, act
}

func (d *runsDialog) SetSize(w, h int) {
	d.size.SetSize(w, h)
	d.layout()
}

// layout gives the summary the lines the view has for it (the page pgup/pgdn move by)
// and keeps its scroll within them.
func (d *runsDialog) layout() {
	if d.mode != runSummary {
		return
	}
	head, body := d.summaryParts(d.width - 4)
	d.page = max(1, d.room()-len(head))
	d.scroll = min(d.scroll, max(0, len(body)-d.page))
}

// room is how many lines the mode's body gets: the height less the frame, the blank
// first line, the blank and the hints at the end, and the notice.
func (d runsDialog) room() int {
	room := max(1, d.height-5)
	if d.notice != "" {
		room = max(1, room-2)
	}
	return room
}

func (d runsDialog) View() string {
	w, h := d.width, d.height
	st := &d.c.styles
	iw := w - 4
	room := d.room()
	var lines []string
	title := "runs"
	r, ok := d.current()
	switch {
	case d.err != "":
		lines = []string{st.Error.Render(oneLine(d.err))}
	case !d.loaded:
		lines = []string{st.Muted.Render("loading…")}
	case d.mode == runList:
		lines = d.listLines(iw, room)
	case d.mode == runWorkflow:
		title = "workflow run " + d.open
		if wr, ok := d.selWorkflow(); ok {
			lines = d.workflowViewLines(wr, iw, room)
		} else {
			lines = []string{st.Muted.Render("workflow run " + d.open + " is gone")}
		}
	case !ok:
		lines = []string{st.Muted.Render("run " + d.open + " is gone")}
	case d.mode == runView:
		title = "run " + r.Name
		lines = d.viewLines(r, iw, room)
	case d.mode == runSummary:
		title = "summary of run " + r.Name
		lines = d.summaryLines(iw, room)
	case d.mode == runForm:
		title = d.formVerb + " " + d.formM + " of " + r.Name
		lines = strings.Split(strings.TrimRight(d.form.View(), "\n"), "\n")
	}
	if len(lines) > room {
		lines = lines[:room]
	}
	if d.notice != "" {
		lines = append(lines, "", d.notice)
	}
	lines = append(lines, "", st.Subtle.Render(d.hints()))
	body := make([]string, 0, len(lines)+1)
	body = append(body, "")
	for _, l := range lines {
		body = append(body, " "+fit(l, iw))
	}
	if len(body) > h-2 {
		body = append(body[:max(0, h-3)], body[len(body)-1])
	}
	return d.c.frame(&st.DialogBorder, &st.DialogTitle, title, body, w, h)
}

func (d runsDialog) hints() string {
	km, dk := d.c.keys.Runs, d.c.keys.Dialog
	switch d.mode {
	case runList:
		if _, ok := d.selWorkflow(); ok {
			return fmt.Sprintf("%s open · %s stop · %s refresh · %s close", km.Open.Label(), km.Stop.Label(), km.Refresh.Label(), dk.Cancel.Label())
		}
		return fmt.Sprintf("%s open · %s summary · %s refresh · %s close", km.Open.Label(), km.Summary.Label(), km.Refresh.Label(), dk.Cancel.Label())
	case runView:
		return fmt.Sprintf("↑/↓ milestone · %s answer · %s hold · %s retry · %s dispatch · %s coder in tree · %s summary · %s back",
			km.Answer.Label(), km.Hold.Label(), km.Retry.Label(), km.Dispatch.Label(), km.Coder.Label(), km.Summary.Label(), dk.Cancel.Label())
	case runSummary:
		return "↑/↓ pgup/pgdn scroll · " + dk.Cancel.Label() + " back"
	case runWorkflow:
		return fmt.Sprintf("%s stop · %s refresh · %s back", km.Stop.Label(), km.Refresh.Label(), dk.Cancel.Label())
	}
	return "enter submit · " + dk.Cancel.Label() + " back"
}

// runStateStyle colours a run's state.
func runStateStyle(c *common, state string) *lipglossStyle {
	st := &c.styles
	switch state {
	case "running", "finishing":
		return &st.Working
	case "waiting":
		return &st.Blocked // nothing moves until you or the lead decide
	case "done", "finished":
		return &st.Done
	case "failed":
		return &st.Error
	}
	return &st.Muted
}

// milestoneGlyph is the one-cell mark of a milestone state and its style.
func milestoneGlyph(c *common, state string) (string, *lipglossStyle) {
	st := &c.styles
	switch state {
	case "planned":
		return "·", &st.Muted
	case "ready":
		return "◌", &st.Queued
	case "building", "fixing":
		return "●", &st.Working
	case "checking", "reviewing", "merging":
		return "◔", &st.Working
	case "asking":
		return "▲", &st.Blocked
	case "merged":
		return "✓", &st.Done
	case "benched", "escalated":
		return "z", &st.Lost
	case "held":
		return "■", &st.Exited
	case "failed":
		return "✗", &st.Error
	}
	return "?", &st.Muted
}

// elapsed is a milestone's time so far: the server's figure, counted on from when the
// view read it while the milestone is under way, so the clock moves between events.
func (d runsDialog) elapsed(m runapi.RunMilestone) int {
	sec := m.ElapsedSeconds
	switch m.State {
	case "planned", "ready", "merged":
		return sec
	}
	if sec > 0 && !d.at.IsZero() && d.c.now.After(d.at) {
		sec += int(d.c.now.Sub(d.at).Seconds())
	}
	return sec
}

// timeCell is "elapsed / estimate", or "-" before the start.
func (d runsDialog) timeCell(m runapi.RunMilestone) string {
	e := d.elapsed(m)
	if e <= 0 && m.EstimateSeconds <= 0 {
		return "-"
	}
	s := "-"
	if e > 0 {
		s = core.FormatSpan(time.Duration(e) * time.Second)
	}
	return s + " / " + core.FormatEstimate(m.EstimateSeconds)
}

// tierCell is the planned tier, with the tier working on it now when they differ.
func tierCell(m runapi.RunMilestone) string {
	if m.TierNow != "" && m.TierNow != m.Tier {
		return m.Tier + "→" + m.TierNow
	}
	return m.Tier
}

func merged(r runapi.RunView) int {
	n := 0
	for _, m := range r.Milestones {
		if m.State == "merged" {
			n++
		}
	}
	return n
}

// attention counts what waits for the user or the lead: questions, failures, holds.
func attention(r runapi.RunView) string {
	var asking, failed, held, undispatched int
	for _, m := range r.Milestones {
		if m.Undispatched != "" {
			undispatched++
		}
		switch m.State {
		case "asking":
			asking++
		case "failed":
			failed++
		case "held":
			held++
		}
	}
	var out []string
	for _, p := range []struct {
		n    int
		what string
	}{{asking, "asking"}, {failed, "failed"}, {held, "held"}, {undispatched, "not dispatched"}} {
		if p.n > 0 {
			out = append(out, strconv.Itoa(p.n)+" "+p.what)
		}
	}
	if len(r.Inbox) > 0 {
		out = append(out, plural(len(r.Inbox), "message", "messages")+" for the lead")
	}
	return strings.Join(out, " · ")
}

// listLines is the list mode: one row per run, then the selected run's milestones.
func (d runsDialog) listLines(w, room int) []string {
	st := &d.c.styles
	if len(d.runs) == 0 {
		return append([]string{st.Muted.Render("no runs; start one with orcr run start NAME once its plan is approved (P)")}, d.markWorkflow(d.workflowLines(w), w)...)
	}
	rows := [][]string{{"NAME", "STATE", "MERGED", "ELAPSED", "STARTED", "WAITING"}}
	for _, r := range d.runs {
		// An open run's clock runs; a closed one's stopped when its log last moved.
		el := core.FormatSpan(d.c.now.Sub(r.Created))
		if r.State != "running" && r.State != "finishing" && r.State != "waiting" {
			el = "-"
			if r.Updated.After(r.Created) {
				el = core.FormatSpan(r.Updated.Sub(r.Created))
			}
		}
		rows = append(rows, []string{r.Name, r.State, fmt.Sprintf("%d/%d", merged(r), len(r.Milestones)), el,
			core.FormatAge(d.c.now.Sub(r.Created)) + " ago", core.Dash(attention(r))})
	}
	out := planColumns(rows, w, func(row, col int, cell string) string {
		switch {
		case row == 0:
			return d.c.p(&st.Muted, cell)
		case col == 1:
			return d.c.p(runStateStyle(d.c, strings.TrimSpace(cell)), cell)
		case col == 5 && strings.TrimSpace(cell) != "-":
			return d.c.p(&st.Blocked, cell)
		}
		return cell
	})
	for i := range out[1:] {
		if i == d.sel {
			out[i+1] = st.Selected.Render(fit(ansi.Strip(out[i+1]), w))
		}
	}
	if _, ok := d.selWorkflow(); ok {
		// A workflow run is selected: the runs' table, then the workflow runs.
		return append(out, d.markWorkflow(d.workflowLines(w), w)...)
	}
	r, _ := d.current()
	out = append(out, "", d.headLine(r))
	rows = [][]string{{"MILESTONE", "STATE", "TITLE", "WAITS ON"}}
	for _, m := range r.Milestones {
		g, _ := milestoneGlyph(d.c, m.State)
		rows = append(rows, []string{g + " " + m.ID, m.State, capCell(m.Title, 28), core.Dash(oneLine(m.Waits))})
	}
	out = append(out, d.paintMilestones(rows, r.Milestones, w)...)
	return append(out, d.workflowLines(w)...)
}

// workflowLines are the workflow runs (DESIGN §18), beside the runs: each with its
// state, its steps finished and the step under way.
func (d runsDialog) workflowLines(w int) []string {
	if len(d.workflows) == 0 {
		return nil
	}
	st := &d.c.styles
	rows := [][]string{{"WORKFLOW RUN", "STATE", "STEPS", "STARTED", "NOW"}}
	for _, r := range d.workflows {
		done, now := 0, ""
		for _, s := range r.Steps {
			switch s.State {
			case "done", "skipped", "failed":
				done++
			case "running":
				if now == "" {
					now = s.Name
					if s.Items > 1 {
						now += fmt.Sprintf(" %d/%d", s.Done, s.Items)
					}
				}
			}
		}
		if r.Why != "" && r.State != "running" {
			now = r.Why
		}
		rows = append(rows, []string{r.ID, r.State, fmt.Sprintf("%d/%d", done, len(r.Steps)),
			core.FormatAge(d.c.now.Sub(r.StartedAt)) + " ago", capCell(core.Dash(now), 40)})
	}
	out := []string{""}
	return append(out, planColumns(rows, w, func(row, col int, cell string) string {
		switch {
		case row == 0:
			return d.c.p(&st.Muted, cell)
		case col == 1:
			return d.c.p(runStateStyle(d.c, strings.TrimSpace(cell)), cell)
		}
		return cell
	})...)
}

// capCell truncates a cell to at most n cells, so one long title does not push every
// later column off the row.
func capCell(s string, n int) string {
	s = oneLine(s)
	if ansi.StringWidth(s) > n {
		return ansi.Truncate(s, n, "…")
	}
	return s
}

// paintMilestones lays out milestone rows (the first column the glyph and id, the
// second the state) in the milestones' state colours.
func (d runsDialog) paintMilestones(rows [][]string, ms []runapi.RunMilestone, w int) []string {
	st := &d.c.styles
	return planColumns(rows, w, func(row, col int, cell string) string {
		if row == 0 {
			return d.c.p(&st.Muted, cell)
		}
		m := ms[row-1]
		_, gs := milestoneGlyph(d.c, m.State)
		switch {
		case col <= 1:
			return d.c.p(gs, cell)
		case rows[0][col] == "TIER" && m.TierNow != m.Tier:
			return d.c.p(&st.Accent, cell)
		case rows[0][col] == "TIME" && m.EstimateSeconds > 0 && d.elapsed(m) > m.EstimateSeconds:
			return d.c.p(&st.GaugeWarn, cell)
		}
		return cell
	})
}

// headLine is a run's state and where its work goes.
func (d runsDialog) headLine(r runapi.RunView) string {
	st := &d.c.styles
	tip := r.Tip
	if len(tip) > 10 {
		tip = tip[:10]
	}
	parts := []string{fmt.Sprintf("%d/%d merged", merged(r), len(r.Milestones)), r.Feature + " @ " + core.Dash(tip), "from " + r.Base,
		"check " + core.Dash(r.Check), core.Dash(r.Mode), plural(r.Coders, "coder", "coders")}
	if r.Reviewer != "" {
		parts = append(parts, "reviewer "+r.Reviewer)
	}
	return d.c.p(&st.Accent, r.Name) + " " + d.c.p(runStateStyle(d.c, r.State), r.State) + d.c.p(&st.Muted, " · "+strings.Join(parts, " · "))
}

// viewLines is the run mode: the head line, the milestone rows (scrolled to keep the
// selection in view), the selected milestone in full, the pool, the lead's inbox and
// as much of the log's tail as fits.
func (d runsDialog) viewLines(r runapi.RunView, w, room int) []string {
	st := &d.c.styles
	out := []string{d.headLine(r), ""}
	// Narrow, the title and the coder give way (the selected milestone's lines below
	// show both) so that tiers, rounds and time stay on the row.
	wide := w >= 110
	row := func(id, state, title, tier, model, rounds, time, coder, waits string) []string {
		if wide {
			return []string{id, state, title, tier, model, rounds, time, coder, waits}
		}
		return []string{id, state, tier, model, rounds, time, waits}
	}
	modelW := 24
	if !wide {
		modelW = 16
	}
	rows := [][]string{row("MILESTONE", "STATE", "TITLE", "TIER", "MODEL", "ROUNDS", "TIME", "CODER", "WAITS ON")}
	for _, m := range r.Milestones {
		g, _ := milestoneGlyph(d.c, m.State)
		coder := core.Dash(m.Coder)
		if a := d.agentAt(coderPath(r.Name, m.Coder)); m.Coder != "" && a != nil {
			coder = glyph(a.State) + " " + m.Coder
		}
		rows = append(rows, row(g+" "+m.ID, m.State, capCell(m.Title, 24), tierCell(m), capCell(core.Dash(m.Model), modelW),
			fmt.Sprintf("%d/%d/%d", m.Rounds.Check, m.Rounds.Review, m.Rounds.Conflict), d.timeCell(m), coder, core.Dash(oneLine(m.Waits))))
	}
	table := d.paintMilestones(rows, r.Milestones, w)
	for i := range table[1:] {
		if i == d.msel {
			table[i+1] = st.Selected.Render(fit(ansi.Strip(table[i+1]), w))
		}
	}
	// The table takes up to half the room; the selected milestone stays in view.
	body := table[1:]
	show := min(len(body), max(3, room/2-2))
	first := min(max(0, d.msel-show+1), max(0, len(body)-show))
	out = append(out, table[0])
	out = append(out, body[first:first+show]...)
	if len(body) > show {
		out = append(out, d.c.p(&st.Subtle, fmt.Sprintf("  %d–%d of %d milestones", first+1, first+show, len(body))))
	}
	if _, m, ok := d.milestone(); ok {
		out = append(out, "")
		out = append(out, d.detailLines(r, m, w)...)
	}
	out = append(out, "", d.poolLine(r))
	// A ready milestone the lead's last turn left undispatched is said right above
	// the inbox: an empty inbox would otherwise read as nothing to do.
	for _, m := range r.Milestones {
		if m.Undispatched != "" {
			out = append(out, d.c.p(&st.Blocked, fit(oneLine(m.Undispatched), w)))
		}
	}
	if len(r.Inbox) > 0 {
		out = append(out, d.c.p(&st.Blocked, fmt.Sprintf("lead's inbox: %d undelivered", len(r.Inbox))))
		for i, item := range r.Inbox {
			if i == 3 {
				out = append(out, d.c.p(&st.Muted, fmt.Sprintf("  … %d more", len(r.Inbox)-3)))
				break
			}
			out = append(out, "  "+fit(oneLine(item), w-2))
		}
	} else {
		out = append(out, d.c.p(&st.Muted, "lead's inbox: nothing waiting"))
	}
	if r.Summary != "" {
		out = append(out, d.c.p(&st.Done, "summary written: "+r.Summary+" ("+d.c.keys.Runs.Summary.Label()+" shows it)"))
	}
	if left := room - len(out) - 2; left > 0 && len(d.log) > 0 {
		out = append(out, "", d.c.p(&st.Muted, "recent"))
		out = append(out, d.logLines(w, left)...)
	}
	return squeeze(out, room)
}

// squeeze drops blank separator lines, last first, until lines fit in room, so a short
// terminal still shows the pool and the inbox under the milestones.
func squeeze(lines []string, room int) []string {
	for i := len(lines) - 1; i > 0 && len(lines) > room; i-- {
		if lines[i] == "" {
			lines = append(lines[:i], lines[i+1:]...)
		}
	}
	return lines
}

// detailLines is the selected milestone in full.
func (d runsDialog) detailLines(r runapi.RunView, m runapi.RunMilestone, w int) []string {
	st := &d.c.styles
	g, gs := milestoneGlyph(d.c, m.State)
	out := []string{d.c.p(gs, g+" "+m.ID) + " " + d.c.p(&st.Bold, oneLine(m.Title)) + " " + d.c.p(gs, m.State)}
	if m.Question != "" {
		out = append(out, "  "+d.c.p(&st.Blocked, "asks: ")+oneLine(m.Question))
	}
	out = append(out, "  "+d.c.p(&st.Muted, "waits on: ")+core.Dash(oneLine(m.Waits)))
	if m.Coder != "" {
		who := coderPath(r.Name, m.Coder)
		if a := d.agentAt(who); a != nil {
			who += " " + d.c.p(d.c.groupStylePtr(groupOfAgent(a)), glyph(a.State)+" "+string(a.State))
		}
		out = append(out, "  "+d.c.p(&st.Muted, "coder: ")+who+d.c.p(&st.Muted, " · "+core.Dash(m.Model)))
	}
	tier := "tier " + m.Tier + " planned"
	if m.TierNow != "" && m.TierNow != m.Tier {
		tier += ", " + m.TierNow + " now"
	}
	out = append(out, "  "+d.c.p(&st.Muted, fmt.Sprintf("rounds: check %d/%d · review %d/%d · conflict %d/%d · %s · time %s",
		m.Rounds.Check, checkRounds, m.Rounds.Review, reviewRounds, m.Rounds.Conflict, conflictRounds, tier, d.timeCell(m))))
	if m.Reason != "" {
		out = append(out, "  "+d.c.p(&st.Error, "reason: ")+oneLine(m.Reason))
	}
	if m.Commit != "" {
		out = append(out, "  "+d.c.p(&st.Muted, "commit: ")+m.Commit)
	}
	for i := range out {
		out[i] = fit(out[i], w)
	}
	return out
}

// poolLine is the run's coders: tier, model, what each works on or how long it rests.
func (d runsDialog) poolLine(r runapi.RunView) string {
	st := &d.c.styles
	if len(r.Pool) == 0 {
		return d.c.p(&st.Muted, "coders: none started yet")
	}
	var parts []string
	for _, c := range r.Pool {
		s := c.Name + " (" + c.Tier + ", " + core.Dash(c.Model) + ") "
		switch {
		case c.BenchedUntil != nil:
			s += "benched " + core.FormatSpan(c.BenchedUntil.Sub(d.c.now)) + " more"
		case c.Milestone != "":
			s += "on " + c.Milestone
		default:
			s += "free"
		}
		parts = append(parts, s)
	}
	return d.c.p(&st.Muted, "coders: ") + strings.Join(parts, d.c.p(&st.Muted, " · "))
}

// logLines is the newest n entries of the open run's log, oldest first.
func (d runsDialog) logLines(w, n int) []string {
	st := &d.c.styles
	es := d.log[max(0, len(d.log)-n):]
	out := make([]string, 0, len(es))
	for _, e := range es {
		age := fitRight(core.FormatAge(d.c.now.Sub(e.At)), 4)
		kind := e.Kind
		if e.Type != "fact" && e.Type != e.Kind {
			kind = e.Type + " " + kind // did, refused
		}
		line := d.c.p(&st.Subtle, age) + " " + d.c.p(&st.Muted, fit(kind, 16)) + " " + fit(e.M, 4) + " " + oneLine(e.Text)
		out = append(out, fit(line, w))
	}
	return out
}

// summaryLines is the summary mode: the file rendered (headings, aligned tables),
// scrolled.
func (d runsDialog) summaryLines(w, room int) []string {
	head, body := d.summaryParts(w)
	page := max(1, room-len(head))
	body = body[min(d.scroll, max(0, len(body)-page)):]
	return append(head, body...)
}

// summaryParts is the summary's path and its file rendered to width w.
func (d runsDialog) summaryParts(w int) (head, body []string) {
	st := &d.c.styles
	s := d.summary
	head = []string{d.c.p(&st.Muted, core.Dash(s.path)), ""}
	switch {
	case s.err != nil:
		body = []string{st.Error.Render(oneLine(s.err.Error()))}
	case s.text == "" && s.path == "":
		body = []string{st.Muted.Render("loading…")}
	default:
		body = renderSummary(d.c, s.text, w)
	}
	return head, body
}

// renderSummary draws summary Markdown: headings in the accent, tables as aligned
// columns with a muted header row, other text wrapped to w.
func renderSummary(c *common, src string, w int) []string {
	st := &c.styles
	var out, table []string
	flush := func() {
		if len(table) == 0 {
			return
		}
		var rows [][]string
		for _, l := range table {
			cells := strings.Split(strings.Trim(strings.TrimSpace(l), "|"), "|")
			if isRule(cells) {
				continue
			}
			for i := range cells {
				cells[i] = strings.TrimSpace(cells[i])
			}
			rows = append(rows, cells)
		}
		n := len(rows[0])
		for i := range rows {
			rows[i] = append(rows[i], make([]string, max(0, n-len(rows[i])))...)[:n]
		}
		if tableWidth(rows) > w {
			out = append(out, recordLines(c, rows, w)...)
			table = nil
			return
		}
		out = append(out, planColumns(rows, w, func(r, _ int, cell string) string {
			if r == 0 {
				return c.p(&st.Muted, cell)
			}
			return cell
		})...)
		table = nil
	}
	for _, l := range strings.Split(strings.TrimRight(sanitize(src), "\n"), "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "|") {
			table = append(table, l)
			continue
		}
		flush()
		switch {
		case strings.HasPrefix(l, "# "):
			out = append(out, st.Accent.Bold(true).Render(fit(strings.TrimPrefix(l, "# "), w)))
		case strings.HasPrefix(l, "## "):
			out = append(out, c.p(&st.Accent, fit("▌ "+strings.TrimPrefix(l, "## "), w)))
		default:
			out = append(out, strings.Split(ansi.Wrap(l, max(10, w), " "), "\n")...)
		}
	}
	flush()
	return out
}

// isRule reports a Markdown table's |---|---| line.
func isRule(cells []string) bool {
	for _, c := range cells {
		if strings.Trim(strings.TrimSpace(c), "-:") != "" {
			return false
		}
	}
	return len(cells) > 0
}

// tableWidth is the width rows take laid out in columns two cells apart.
func tableWidth(rows [][]string) int {
	if len(rows) == 0 {
		return 0
	}
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, cell := range r {
			widths[i] = max(widths[i], ansi.StringWidth(cell))
		}
	}
	total := 2 * (len(widths) - 1)
	for _, cw := range widths {
		total += cw
	}
	return total
}

// recordLines draws a table too wide for w one row at a time: its first cell, then
// "header value" pairs wrapped under it.
func recordLines(c *common, rows [][]string, w int) []string {
	st := &c.styles
	var out []string
	for _, r := range rows[1:] {
		out = append(out, c.p(&st.Bold, fit(r[0], w)))
		// Pairs are packed greedily and never split, so a value stays whole.
		line, lw := "", 0
		for i, cell := range r[1:] {
			head, val := rows[0][i+1], core.Dash(cell)
			pw := ansi.StringWidth(head) + 1 + ansi.StringWidth(val)
			if lw > 0 && lw+3+pw > w-2 {
				out = append(out, fit("  "+line, w))
				line, lw = "", 0
			}
			if lw > 0 {
				line += c.p(&st.Subtle, " · ")
				lw += 3
			}
			line += c.p(&st.Muted, head) + " " + val
			lw += pw
		}
		if lw > 0 {
			out = append(out, fit("  "+line, w))
		}
	}
	return out
}
