package ui

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"

	"orcr/core/wire"
)

// killDialog selects agents by glob, shows the live list of matches (a dry-run kill per
// change, at most one in flight), and kills only after an explicit confirmation key.
type killDialog struct {
	size
	c       *common
	in      textinput.Model
	matches []wire.Agent
	shown   string // glob the matches belong to
	asked   string // glob of the dry run in flight ("" when none)
	err     string
	confirm bool
}

func newKillDialog(c *common, glob string) *killDialog {
	in := textinput.New()
	in.Prompt = "glob › "
	in.Placeholder = "demo/**"
	in.SetValue(glob)
	in.CursorEnd()
	return &killDialog{c: c, in: in}
}

func (d *killDialog) Init() tea.Cmd { return d.in.Focus() }

// query asks for the matches of the current glob unless a dry run is already in flight;
// the result handler asks again if the glob moved on meanwhile.
func (d *killDialog) query() action {
	g := d.in.Value()
	if g == "" || d.asked != "" || g == d.shown {
		return nil
	}
	d.asked = g
	return dryRunAction{g}
}

func (d *killDialog) Update(msg tea.Msg) (tea.Cmd, action) {
	km := d.c.keys.Dialog
	switch msg := msg.(type) {
	case dryRunMsg:
		d.asked = ""
		d.shown, d.matches, d.err = msg.glob, msg.agents, ""
		if msg.err != nil {
			d.matches, d.err = nil, msg.err.Error()
		}
		return nil, d.query()
	case tea.KeyPressMsg:
		if d.confirm {
			switch {
			case km.Confirm.Matches(msg):
				return nil, killAction{glob: d.shown, agents: d.matches}
			case km.Cancel.Matches(msg), msg.String() == "n":
				d.confirm = false
			}
			return nil, nil
		}
		switch {
		case km.Cancel.Matches(msg):
			return nil, closeAction{}
		case km.Submit.Matches(msg):
			if d.shown == d.in.Value() && len(d.matches) > 0 {
				d.confirm = true
			}
			return nil, nil
		}
	}
	var cmd tea.Cmd
	d.in, cmd = d.in.Update(msg)
	if d.in.Value() != d.shown && d.in.Value() == "" {
		d.shown, d.matches = "", nil
	}
	return cmd, d.query()
}

func (d killDialog) View() string {
	st := &d.c.styles
	lines := []string{d.in.View(), ""}
	switch {
	case d.err != "":
		lines = append(lines, st.Error.Render(oneLine(d.err)))
	case d.in.Value() == "":
		lines = append(lines, st.Muted.Render("type a glob: review/*, demo/**, */tests"))
	case d.shown != d.in.Value():
		lines = append(lines, st.Muted.Render("matching…"))
	case len(d.matches) == 0:
		lines = append(lines, st.Muted.Render("no live agent matches"))
	default:
		lines = append(lines, st.Text.Render(fmt.Sprintf("%s match:", plural(len(d.matches), "agent", "agents"))))
		room := max(1, d.height-12)
		for i, a := range d.matches {
			if i == room && len(d.matches) > room+1 {
				lines = append(lines, st.Muted.Render(fmt.Sprintf("  … and %d more", len(d.matches)-room)))
				break
			}
			lines = append(lines, "  "+d.c.agentStyle(&a).Render(glyph(a.State))+" "+st.Text.Render(a.Path)+st.Muted.Render("  "+string(a.State)))
		}
	}
	lines = append(lines, "")
	if d.confirm {
		lines = append(lines, st.Danger.Render(fmt.Sprintf("kill %s matching %s? ", plural(len(d.matches), "agent", "agents"), d.shown))+
			st.KeyDestructive.Render(d.c.keys.Dialog.Confirm.Label())+st.Muted.Render(" yes · n/"+d.c.keys.Dialog.Cancel.Label()+" no"))
	} else {
		lines = append(lines, st.Subtle.Render(d.c.keys.Dialog.Submit.Label()+" review kill · "+d.c.keys.Dialog.Cancel.Label()+" cancel"))
	}
	return dialogBox(d.c, "kill by glob", lines, d.width, d.height, 64)
}

// A confirmed kill runs in the background: the dialog closes at once, each agent is
// killed by its own call (by id, so exactly the agents the user saw are stopped), at
// most killParallel at a time, and each answer is a killProgressMsg. The status bar
// shows the count while it runs and a report at the end. No call spans the whole
// fleet, so no single deadline can cut a long kill short: nine agents killed under one
// ten-second call once ended in "context deadline exceeded" while they kept dying.

// killParallel bounds the kill calls in flight for one job (the server's bound for a
// glob is the same).
const killParallel = 8

// killAgentTimeout bounds the kill of one agent: a pane whose program ignores SIGHUP
// waits out the host's grace before SIGKILL, and a loaded machine is slow, so it is
// generous; its end is reported as that agent not stopping, never as the job failing.
const killAgentTimeout = 2 * time.Minute

// killJob is one confirmed kill in progress.
type killJob struct {
	id      int
	glob    string
	total   int
	pending []wire.Agent // not asked yet, in path order
	running int
	killed  int
	ended   int      // agents that ended on their own before their kill
	failed  []string // "path: why" for each agent that could not be killed
}

// killProgressMsg answers the kill of one agent of job.
type killProgressMsg struct {
	job    int
	target wire.Agent
	agents []wire.Agent // the killed record, as the server returned it
	err    error
}

func killAgentCmd(ctx context.Context, svc wire.Transport, job int, a wire.Agent) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, killAgentTimeout)
		defer cancel()
		r, err := wire.Call(ctx, svc, wire.AgentKill, wire.KillParams{Glob: a.ID})
		return killProgressMsg{job: job, target: a, agents: r.Agents, err: err}
	}
}

// startKill begins a background kill of the confirmed agents.
func (m *Model) startKill(a killAction) tea.Cmd {
	if len(a.agents) == 0 {
		return nil
	}
	m.killSeq++
	job := &killJob{id: m.killSeq, glob: a.glob, total: len(a.agents), pending: append([]wire.Agent(nil), a.agents...)}
	if m.kills == nil {
		m.kills = map[int]*killJob{}
	}
	m.kills[job.id] = job
	var cmds []tea.Cmd
	for len(job.pending) > 0 && job.running < killParallel {
		cmds = append(cmds, m.nextKill(job))
	}
	return tea.Batch(cmds...)
}

// nextKill asks for the kill of the job's next pending agent.
func (m *Model) nextKill(job *killJob) tea.Cmd {
	a := job.pending[0]
	job.pending = job.pending[1:]
	job.running++
	return killAgentCmd(m.ctx, m.svc, job.id, a)
}

// updateKills handles the answers of background kills; ok says msg was one.
func (m *Model) updateKills(msg tea.Msg) (tea.Cmd, bool) {
	p, ok := msg.(killProgressMsg)
	if !ok {
		return nil, false
	}
	job := m.kills[p.job]
	if job == nil {
		return nil, true
	}
	job.running--
	switch {
	case p.err == nil:
		job.killed++
		for _, a := range p.agents {
			m.upsert(a)
		}
	case errors.Is(p.err, wire.ErrNotFound):
		job.ended++
	case errors.Is(p.err, context.DeadlineExceeded):
		job.failed = append(job.failed, fmt.Sprintf("%s: did not stop within %s; see orcr agent ls", p.target.Path, killAgentTimeout))
	default:
		job.failed = append(job.failed, p.target.Path+": "+p.err.Error())
	}
	if len(job.pending) > 0 {
		return m.nextKill(job), true
	}
	if job.running > 0 {
		return nil, true
	}
	delete(m.kills, job.id)
	m.status.notify(m.c.now, job.report(), len(job.failed) > 0)
	return nil, true
}

// report is what the job did, for the status bar.
func (j *killJob) report() string {
	s := fmt.Sprintf("killed %d of %d matching %s", j.killed, j.total, j.glob)
	if j.ended > 0 {
		s += fmt.Sprintf(" (%d had already ended)", j.ended)
	}
	if len(j.failed) > 0 {
		s += "; failed: " + strings.Join(j.failed, "; ")
	}
	return s
}

// killProgress is the status bar's line while kills run ("" when none does).
func (m *Model) killProgress() string {
	if len(m.kills) == 0 {
		return ""
	}
	ids := make([]int, 0, len(m.kills))
	for id := range m.kills {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	parts := make([]string, 0, len(ids))
	for _, id := range ids {
		j := m.kills[id]
		parts = append(parts, fmt.Sprintf("killing %s: %d of %d done", j.glob, j.total-len(j.pending)-j.running, j.total))
	}
	return strings.Join(parts, " · ")
}
