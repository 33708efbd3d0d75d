package ui

import (
	"fmt"
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"orcr/core"

	planapi "orcr/orchestrate/api"
)

// Drawing the plans view: the list with the selected plan's milestones, and one plan
// rendered from its Markdown with line numbers, so a problem's "line 7" is found at a
// glance.

func (d *plansDialog) Update(msg tea.Msg) (tea.Cmd, action) {
	cmd, act := d.update(msg)
	d.layout()
	return cmd, act
}

func (d *plansDialog) SetSize(w, h int) {
	d.size.SetSize(w, h)
	d.layout()
}

// layout gives the open plan the lines under its summary (the page pgup/pgdn move by)
// and keeps the scroll within the file.
func (d *plansDialog) layout() {
	if d.mode != planView {
		return
	}
	p, det, _ := d.current()
	head, body := d.viewParts(p, det, d.width-4)
	d.page = d.viewPage(len(head))
	d.scroll = min(d.scroll, max(0, len(body)-d.page))
}

// viewPage is how many lines of the file fit under a summary of head lines.
func (d plansDialog) viewPage(head int) int { return max(1, d.height-4-head-3) }

// listLines is the list mode: one row per plan, then the selected plan's milestones.
func (d plansDialog) listLines(w int) []string {
	st := &d.c.styles
	if len(d.plans) == 0 {
		return []string{st.Muted.Render(`no plans; start one with orcr plan new NAME "request" --repo DIR`)}
	}
	rows := [][]string{{"NAME", "STATE", "LEAD", "MILESTONES", "ESTIMATE", "AGE"}}
	for _, p := range d.plans {
		det := d.details[p.Name]
		ms, est := "-", 0
		if len(det.Milestones) > 0 {
			ms = strconv.Itoa(len(det.Milestones))
			for _, m := range det.Milestones {
				est += m.EstimateSeconds
			}
		}
		rows = append(rows, []string{p.Name, p.State, p.Lead, ms, core.FormatEstimate(est), core.FormatAge(d.c.now.Sub(p.CreatedAt))})
	}
	out := planColumns(rows, w, func(r, col int, cell string) string {
		switch {
		case r == 0:
			return d.c.p(&st.Muted, cell)
		case col == 1:
			return d.c.p(planStateStyle(d.c, cell), cell)
		}
		return cell
	})
	for i := range out[1:] {
		if i == d.sel {
			out[i+1] = st.Selected.Render(fit(ansi.Strip(out[i+1]), w))
		}
	}
	p, det, _ := d.current()
	out = append(out, "", d.c.p(&st.Accent, "plan "+p.Name)+d.c.p(&st.Muted, " · "+oneLine(p.Request)))
	out = append(out, problemLines(d.c, p, det, w)...)
	if len(det.Milestones) > 0 {
		out = append(out, "")
		out = append(out, milestoneLines(d.c, det.Milestones, w)...)
	}
	return out
}

// planStateStyle colours a plan state like the agent states it resembles.
func planStateStyle(c *common, state string) *lipglossStyle {
	st := &c.styles
	switch state {
	case "drafting", "rejected":
		return &st.Working
	case "drafted":
		return &st.Blocked // it waits for the user
	case "approved":
		return &st.Done
	case "failed":
		return &st.Error
	}
	return &st.Muted
}

// problemLines says what is wrong with the plan's file, by line.
func problemLines(c *common, p planapi.Plan, det planapi.PlanGetResult, w int) []string {
	st := &c.styles
	var out []string
	if p.State == "rejected" || (p.Reason != "" && p.State == "drafting") {
		out = append(out, c.p(&st.Muted, "rejected because: ")+oneLine(p.Reason))
	}
	for _, pr := range det.Problems {
		out = append(out, st.Error.Render(fit(pr.Message+" ["+pr.Code+"]", w)))
	}
	return out
}

// milestoneLines is the milestone table: id, title, depends, tier, estimate, why.
func milestoneLines(c *common, ms []planapi.PlanMilestone, w int) []string {
	st := &c.styles
	rows := [][]string{{"ID", "TITLE", "DEPENDS", "TIER", "ESTIMATE", "MODEL-WHY"}}
	for _, m := range ms {
		rows = append(rows, []string{m.ID, m.Title, core.Dash(strings.Join(m.Depends, ",")), m.Tier,
			core.FormatEstimate(m.EstimateSeconds), core.Dash(m.ModelWhy)})
	}
	return planColumns(rows, w, func(r, col int, cell string) string {
		switch {
		case r == 0:
			return c.p(&st.Muted, cell)
		case col == 3:
			return c.p(tierStyle(c, cell), cell)
		}
		return cell
	})
}

func tierStyle(c *common, tier string) *lipglossStyle {
	switch tier {
	case "high":
		return &c.styles.Accent
	case "medium":
		return &c.styles.Text
	}
	return &c.styles.Muted
}

// planColumns lays rows out in columns of their widest cell (the last column takes what
// is left), each line exactly w cells; paint styles a cell by row and column.
func planColumns(rows [][]string, w int, paint func(r, col int, cell string) string) []string {
	if len(rows) == 0 {
		return nil
	}
	n := len(rows[0])
	widths := make([]int, n)
	for _, r := range rows {
		for i, cell := range r {
			widths[i] = max(widths[i], ansi.StringWidth(cell))
		}
	}
	out := make([]string, len(rows))
	for ri, r := range rows {
		var b strings.Builder
		used := 0
		for i, cell := range r {
			cw := widths[i]
			if i == n-1 || used+cw > w {
				cw = max(0, w-used)
			}
			b.WriteString(paint(ri, i, fit(cell, cw)))
			used += cw
			if i < n-1 && used < w {
				b.WriteString("  ")
				used += 2
			}
			if used >= w {
				break
			}
		}
		out[ri] = fit(b.String(), w)
	}
	return out
}

// viewLines is the plan mode: the record's summary, the problems, then the file
// rendered with line numbers, scrolled.
func (d plansDialog) viewLines(p planapi.Plan, det planapi.PlanGetResult, w int) []string {
	head, body := d.viewParts(p, det, w)
	page := d.viewPage(len(head))
	body = body[min(d.scroll, max(0, len(body)-page)):]
	return append(head, body...)
}

// viewParts is the plan's summary and problems (head) and its file rendered to width
// w (body).
func (d plansDialog) viewParts(p planapi.Plan, det planapi.PlanGetResult, w int) (head, body []string) {
	st := &d.c.styles
	head = []string{
		d.c.p(planStateStyle(d.c, p.State), p.State) + d.c.p(&st.Muted, fmt.Sprintf(" · lead %s on %s · round %d · %s", p.LeadPath, p.Lead, p.Rounds, p.File)),
	}
	if p.ApprovedHash != "" {
		h := p.ApprovedHash
		if p.FileHash != p.ApprovedHash {
			h += " (the file changed since)"
		}
		head = append(head, d.c.p(&st.Muted, "approved sha256 ")+h)
	}
	head = append(head, problemLines(d.c, p, det, w)...)
	head = append(head, "")
	switch {
	case det.Missing:
		body = []string{st.Muted.Render("the lead has not written the file yet")}
	case det.Source == "":
		body = []string{st.Muted.Render("nothing to show")}
	default:
		body = renderPlan(d.c, det.Source, det.Problems, w)
	}
	return head, body
}

// renderPlan draws plan Markdown: headings in the accent, keys muted, check boxes as
// boxes, code and comments subdued, each line under its number (marked where a
// problem is), wrapped to w.
func renderPlan(c *common, src string, problems []planapi.PlanProblem, w int) []string {
	st := &c.styles
	bad := map[int]bool{}
	for _, p := range problems {
		bad[p.Line] = true
	}
	lines := strings.Split(strings.TrimRight(src, "\n"), "\n")
	gw := len(strconv.Itoa(len(lines)))
	text := max(10, w-gw-3)
	var out []string
	inCode, inComment := false, false
	for i, l := range lines {
		n := i + 1
		var styled string
		trim := strings.TrimSpace(l)
		switch {
		case inComment || strings.HasPrefix(trim, "<!--"):
			inComment = !strings.Contains(trim, "-->")
			styled = c.p(&st.Subtle, l)
		case strings.HasPrefix(trim, "```") || strings.HasPrefix(trim, "~~~"):
			inCode = !inCode
			styled = c.p(&st.Subtle, l)
		case inCode:
			styled = c.p(&st.Muted, l)
		case strings.HasPrefix(l, "# "):
			styled = st.Accent.Bold(true).Render(strings.TrimPrefix(l, "# "))
		case strings.HasPrefix(l, "## "):
			styled = c.p(&st.Accent, "▌ "+strings.TrimPrefix(l, "## "))
		case strings.HasPrefix(l, "### "):
			styled = c.p(&st.Bold, strings.TrimPrefix(l, "### "))
		case strings.HasPrefix(trim, "- [ ] "):
			styled = "☐ " + strings.TrimPrefix(trim, "- [ ] ")
		case strings.HasPrefix(trim, "- [x] ") || strings.HasPrefix(trim, "- [X] "):
			styled = c.p(&st.Done, "☑ "+trim[6:])
		case strings.HasPrefix(trim, "- ") || strings.HasPrefix(trim, "* "):
			styled = "• " + trim[2:]
		default:
			if k, v, ok := strings.Cut(l, ":"); ok && isKey(k) {
				styled = c.p(&st.Muted, k+":") + v
			} else {
				styled = l
			}
		}
		gutter := c.p(&st.Subtle, fmt.Sprintf("%*d │ ", gw, n))
		if bad[n] {
			gutter = c.p(&st.Error, fmt.Sprintf("%*d ! ", gw, n))
		}
		wrapped := strings.Split(ansi.Wrap(styled, text, " "), "\n")
		for j, part := range wrapped {
			if j == 0 {
				out = append(out, gutter+part)
			} else {
				out = append(out, strings.Repeat(" ", gw)+c.p(&st.Subtle, " ┆ ")+part)
			}
		}
	}
	return out
}

// isKey reports a plan key ("tier", "model-why"): letters and dashes only.
func isKey(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-') {
			return false
		}
	}
	return true
}

// lipglossStyle names lipgloss.Style for the style pickers above.
type lipglossStyle = lipgloss.Style
