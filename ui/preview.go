package ui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"

	"orcr/core"
	"orcr/core/wire"
)

// previewModel shows the selected agent: its state and why, what it is blocked on, its
// last message, and the bottom of its screen. The screen text arrives through readMsg;
// the root decides when to read (on selection and on agent.screen events, coalesced).
type previewModel struct {
	c     *common
	w, h  int
	focus bool

	agent  *wire.Agent // snapshot of the selection (nil: nothing selected)
	node   *node       // the selected tree node, for the roll-up summary of inner nodes
	id     string      // whose screen text is held
	screen string
	live   bool
	err    string
	scroll int      // lines scrolled up from the bottom of the screen text
	lines  []string // screen as lines, each carrying the styles open at its start
	styled bool     // the screen came with its colours (SGR sequences kept)
	// depth is how many lines of scrollback plus screen the next read asks for while
	// the pane is scrolled up (0: just the screen; -1: the agent has no more); more is
	// fetched a page ahead of the scroll.
	depth int
	// more is set when a scroll came near the top of what was read and the agent may
	// have more scrollback; the root reads again (a read never runs from here).
	more bool
	// want is the scroll a key asked for beyond what was read; the deeper read that
	// follows scrolls there. exhausted: the last deep read found no more lines.
	want      int
	exhausted bool
}

// maxDepth bounds how far back the preview reads scrollback: lines beyond it are for
// `orcr agent read --lines N` or an attach.
const maxDepth = 5000

func newPreview(c *common) *previewModel { return &previewModel{c: c} }

// SetSize sets the pane's outer size.
func (p *previewModel) SetSize(w, h int) {
	p.w, p.h = w, h
	p.clampScroll()
}

// screenLines is how many lines of screen text (and scrollback) the root asks the
// service for: what the pane can show, or while scrolled up as deep as it has read.
func (p *previewModel) screenLines() int {
	if p.depth > 0 {
		return p.depth
	}
	return max(1, p.h-2)
}

// setAgent points the preview at a (possibly different) agent snapshot.
func (p *previewModel) setAgent(a *wire.Agent) {
	if a == nil || p.agent == nil || a.ID != p.agent.ID {
		p.scroll, p.depth, p.more, p.want, p.exhausted = 0, 0, false, 0, false
	}
	p.agent = a
}

// setScreen stores a read result for agent id.
// asked is how many lines the read asked for (0: the current depth).
func (p *previewModel) setScreen(id string, r wire.ReadResult, err error, asked int) {
	if err != nil {
		p.err = err.Error()
		return
	}
	p.id, p.live, p.err = id, r.Live, ""
	p.screen = sanitizeSGR(r.Text)
	p.styled = strings.IndexByte(p.screen, 0x1b) >= 0
	p.lines = carrySGR(lastLines(p.screen, 1<<20))
	if asked == 0 {
		asked = p.screenLines()
	}
	// An answer to a read as deep as the preview wants: fewer lines than asked for
	// means the agent has no more scrollback (stop asking), and the scroll a key
	// asked for can be reached now. A late answer to a shallower read decides neither.
	if p.depth > 0 && asked >= p.depth {
		p.exhausted = len(p.lines) < asked
		if p.want > 0 {
			p.scroll, p.want = p.want, 0
		}
	}
	p.clampScroll()
}

// maxScroll is how far the screen text scrolls up: its lines beyond the room the
// header leaves. ok is false while no screen text is shown; nothing bounds the scroll
// then.
func (p previewModel) maxScroll() (n int, ok bool) {
	a := p.agent
	if a == nil || p.id != a.ID {
		return 0, false
	}
	room := p.h - 2 - len(p.head(a))
	if room <= 0 {
		return 0, false
	}
	return max(0, len(p.text(a))-room), true
}

// clampScroll keeps the scroll within what there is to show.
func (p *previewModel) clampScroll() {
	if n, ok := p.maxScroll(); ok {
		p.scroll = min(p.scroll, n)
	}
}

// Update scrolls the screen text when the preview has focus.
func (p *previewModel) Update(msg tea.Msg) tea.Cmd {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		return nil
	}
	// The text may have changed since the last key (a new screen, a taller header):
	// scroll from where the pane shows it.
	p.clampScroll()
	switch km := p.c.keys.Panel; {
	case km.Up.Matches(k):
		p.scrollBy(1)
	case km.Down.Matches(k):
		p.scrollBy(-1)
	case km.PageUp.Matches(k):
		p.scrollBy(p.page())
	case km.PageDown.Matches(k):
		p.scrollBy(-p.page())
	}
	return nil
}

// page is how far pgup and pgdn move: the screen text's room less a line of context.
func (p *previewModel) page() int {
	if p.agent == nil {
		return 1
	}
	return max(1, p.h-2-len(p.head(p.agent))-1)
}

// scrollBy moves the screen text n lines up (down when n < 0), and asks for more
// scrollback when the scroll comes within a page of the top of what was read.
func (p *previewModel) scrollBy(n int) {
	target := max(0, p.scroll+n)
	p.scroll = target
	p.clampScroll()
	if target == 0 {
		p.depth, p.more, p.want, p.exhausted = 0, false, 0, false
		return
	}
	lim, ok := p.maxScroll()
	if !ok || p.exhausted || lim-target >= p.page() {
		return
	}
	depth := min(maxDepth, max(p.depth, len(p.lines))+4*p.page())
	if depth > p.depth {
		p.depth, p.more = depth, true
		if target > p.scroll {
			p.want = target
		}
	}
}

// wantsMore reports (once) that a scroll needs deeper scrollback than was read.
func (p *previewModel) wantsMore() bool {
	m := p.more
	p.more = false
	return m
}

// View draws the header lines then as much screen text as fits.
func (p previewModel) View() string {
	st := &p.c.styles
	inner := p.w - 2
	bh := p.h - 2
	a := p.agent
	if a == nil {
		return p.c.paneFrame("preview", p.summary(), p.w, p.h, p.focus)
	}
	body := p.head(a)
	room := bh - len(body)
	if p.id == a.ID && room > 0 {
		all := p.text(a)
		// Update bounds the scroll when a key moves it and when the size or the
		// screen changes; a header grown since (a new snapshot) is allowed for here,
		// on View's copy.
		end := len(all) - min(p.scroll, max(0, len(all)-room))
		start := max(0, end-room)
		styled := p.styled && p.screen != ""
		for _, l := range all[start:end] {
			if styled {
				// The agent's own colours: only SGR survived sanitizeSGR, and
				// styledFit resets them at the end of the line.
				body = append(body, styledFit(l, inner))
			} else {
				body = append(body, st.Text.Render(fit(l, inner)))
			}
		}
	}
	title := a.Path
	if p.id == a.ID && !p.live && p.screen != "" {
		title += " (last screen)"
	}
	if p.scroll > 0 {
		title += fmt.Sprintf(" ↑%d", p.scroll)
	}
	return p.c.paneFrame(title, body, p.w, p.h, p.focus)
}

// text is a's screen text as lines: the last read, or the screen kept in its record.
func (p previewModel) text(a *wire.Agent) []string {
	if p.screen == "" && a.LastScreen != "" {
		return lastLines(sanitize(a.LastScreen), 1<<20)
	}
	return p.lines
}

// head is what the preview says above the screen text — state and why, what a is
// blocked on, its last message, usage — at most half the pane, then the separator.
func (p previewModel) head(a *wire.Agent) []string {
	st := &p.c.styles
	inner := p.w - 2
	bh := p.h - 2
	var head []string
	ss := p.c.agentStyle(a)
	line := ss.Render(glyph(a.State)+" "+string(a.State)) + st.Muted.Render("  "+a.Provider)
	if a.Model != "" {
		line += st.Muted.Render(" · " + a.Model)
	}
	if a.Role != "" {
		line += st.Muted.Render(" · role " + a.Role)
	}
	if a.Host != "" {
		line += st.Subtle.Render(" · " + a.Host)
	}
	head = append(head, line)
	if a.StateSource != "" || a.StateReason != "" {
		head = append(head, st.Subtle.Render("why: ")+st.Text.Render(strings.TrimSpace(a.StateSource+": "+a.StateReason)))
	}
	if a.State == wire.StateHibernated {
		head = append(head, st.Muted.Render("asleep: its process stopped, its session kept · "+p.c.keys.Tree.Attach.Label()+" wakes it"))
	}
	if b := a.Blocked; b != nil {
		head = append(head, st.Blocked.Render("blocked on "+b.Kind+": ")+st.Text.Render(oneLine(b.Detail)))
		if len(b.Options) > 0 {
			labels := make([]string, len(b.Options))
			for i, o := range b.Options {
				labels[i] = o.Label
			}
			head = append(head, st.Muted.Render("options: ")+st.Text.Render(strings.Join(labels, " | "))+
				st.Subtle.Render("  ("+p.c.keys.Tree.Answer.Label()+" to answer)"))
		}
		if b.ResetsAt != nil {
			head = append(head, st.Muted.Render("resets "+b.ResetsAt.UTC().Format("15:04 UTC")+" (in "+core.FormatAge(b.ResetsAt.Sub(p.c.now))+")"))
		}
	}
	if a.QueuePos > 0 {
		head = append(head, p.c.styles.Queued.Render(fmt.Sprintf("queued: position %d", a.QueuePos)))
	}
	if a.Error != "" {
		head = append(head, st.Error.Render("error: "+oneLine(a.Error)))
	}
	if a.ExitCode != nil {
		es := &st.Muted
		if *a.ExitCode != 0 {
			es = p.c.groupStylePtr(gLost)
		}
		head = append(head, es.Render(fmt.Sprintf("exit code %d", *a.ExitCode)))
	}
	if a.LastMessage != "" {
		head = append(head, st.Subtle.Render("last: ")+st.Text.Render(oneLine(sanitize(a.LastMessage))))
	}
	// Usage last: where the pane is short, the lines above matter more (the tree has
	// the same numbers when it is wide enough for their columns).
	if tok, cost := core.FormatTokens(a.Usage), core.FormatCost(*a); tok != "-" || cost != "-" {
		head = append(head, st.Muted.Render("tokens "+tok+"  cost "+cost))
	}
	if p.err != "" {
		head = append(head, st.Error.Render("read: "+oneLine(p.err)))
	}
	sep := st.Subtle.Render(strings.Repeat("─", max(0, inner)))
	if len(head) > bh/2 {
		head = head[:max(1, bh/2)]
	}
	return append(head, sep)
}

// oneLine folds text onto one line for a header.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// summary describes the selected inner node when it is not itself an agent.
func (p previewModel) summary() []string {
	st := &p.c.styles
	n := p.node
	if n == nil {
		return []string{st.Muted.Render("select an agent")}
	}
	r := n.roll
	out := []string{st.Bold.Render(n.path+"/") + st.Muted.Render("  "+plural(r.agents, "agent", "agents")), ""}
	names := [...]string{"blocked", "working", "queued", "done/idle", "failed/lost", "exited"}
	for g := group(0); g < nGroups; g++ {
		if r.groups[g] > 0 {
			out = append(out, p.c.groupStyle(g).Render(fmt.Sprintf("%s %d %s", glyphOfGroup(g), r.groups[g], names[g])))
		}
	}
	out = append(out, "", st.Muted.Render("tokens "+r.usage.Tokens()+"  cost "+r.usage.Cost()))
	return out
}
