package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/term"

	"orcr/core"
	"orcr/core/wire"
	"orcr/internal/natural"
)

// `orcr top` is the agent tree in the terminal without taking it over: on a terminal
// it redraws the same lines in place (never more lines than the window has, each cut
// to its width, so nothing scrolls into the scrollback), with the states coloured;
// piped, it prints one frame after another as plain text. Ended agents are left out
// as the dashboard leaves them out, and counted; --ended shows them.

// topOptions are top's flags.
type topOptions struct {
	glob  string
	once  bool
	ended bool
}

// topScreen is where top draws: whether it is a terminal (then in place and coloured)
// and its size.
type topScreen struct {
	tty, color    bool
	width, height int
}

func (app *app) screen() topScreen {
	f, ok := app.out.(*os.File)
	if !ok || !term.IsTerminal(f.Fd()) {
		return topScreen{}
	}
	s := topScreen{tty: true, color: os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb", width: 80, height: 24}
	if w, h, err := term.GetSize(f.Fd()); err == nil && w > 0 && h > 0 {
		s.width, s.height = w, h
	}
	return s
}

// top prints the live agent tree, redrawing on every event and every few seconds.
func (app *app) top(ctx context.Context, o topOptions) error {
	cl := service(ctx)
	scr := app.screen()
	prev := 0
	draw := func() error {
		as, err := wire.ListAgents(ctx, cl, wire.ListParams{Glob: o.glob})
		if err != nil {
			return err
		}
		if scr.tty {
			scr = app.screen() // the window may have been resized
		}
		lines := topFrame(as, o, scr, time.Now())
		var b strings.Builder
		switch {
		case scr.tty && prev > 0:
			fmt.Fprintf(&b, "\r\x1b[%dA", prev)
		case !scr.tty && prev > 0:
			b.WriteString("\n")
		}
		for _, l := range lines {
			b.WriteString(l)
			if scr.tty {
				b.WriteString("\x1b[K")
			}
			b.WriteString("\n")
		}
		if scr.tty {
			b.WriteString("\x1b[J")
		}
		prev = len(lines)
		_, err = io.WriteString(app.out, b.String())
		return err
	}
	if scr.tty && !o.once {
		io.WriteString(app.out, "\x1b[?25l")
		defer io.WriteString(app.out, "\x1b[?25h")
	}
	if err := draw(); err != nil || o.once {
		return err
	}
	info, err := wire.Call(ctx, cl, wire.Info, wire.Empty{})
	if err != nil {
		return err
	}
	ch, err := wire.Subscribe(ctx, cl, wire.SubscribeParams{After: info.LastSeq})
	if err != nil {
		return err
	}
	tick := time.NewTicker(5 * time.Second) // ages advance even when nothing happens
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-ch:
			if !ok {
				return fmt.Errorf("event stream ended: the server stopped")
			}
			// Coalesce bursts: drain what is already there before redrawing.
			for drained := false; !drained; {
				select {
				case <-ch:
				default:
					drained = true
				}
			}
		case <-tick.C:
		}
		if err := draw(); err != nil {
			return err
		}
	}
}

// topCols are top's columns after the tree's names.
var topCols = []string{"STATE", "PROVIDER", "AGE", "TOKENS", "COST", "WAITS-ON"}

// topFrame is one frame of top: a summary line, the column header and the tree, in
// natural path order, aligned, coloured when scr.color, and on a terminal cut to its
// height and width.
func topFrame(as []wire.Agent, o topOptions, scr topScreen, now time.Time) []string {
	slices.SortStableFunc(as, func(a, b wire.Agent) int { return natural.ComparePaths(a.Path, b.Path) })
	counts := map[wire.State]int{}
	hidden := 0
	shown := as[:0:0]
	for _, a := range as {
		if a.State.Terminal() && !o.ended {
			hidden++
			continue
		}
		counts[a.State]++
		shown = append(shown, a)
	}
	summary := fmt.Sprintf("%d agents", len(shown))
	for _, s := range []wire.State{wire.StateBlocked, wire.StateWorking, wire.StateQueued, wire.StateIdle, wire.StateDone} {
		if counts[s] > 0 {
			summary += fmt.Sprintf(" · %d %s", counts[s], s)
		}
	}
	if hidden > 0 {
		summary += fmt.Sprintf(" · %d ended not shown (--ended shows them)", hidden)
	}
	if o.glob != "" {
		summary = o.glob + ": " + summary
	}
	if len(shown) == 0 {
		hint := "no agents — start one with: orcr agent run demo/hello -- sh"
		if o.glob != "" || hidden > 0 {
			hint = "no running agents match"
		}
		return []string{summary, hint}
	}

	// The tree: each agent under the directories of its path, each directory once.
	type row struct {
		name  string
		cells []string
		agent *wire.Agent
	}
	var rows []row
	byPath := map[string]int{}
	for i := range shown {
		byPath[shown[i].Path] = i
	}
	seen := map[string]bool{}
	for _, a := range shown {
		segs := strings.Split(a.Path, "/")
		for i := range segs {
			p := strings.Join(segs[:i+1], "/")
			if seen[p] {
				continue
			}
			seen[p] = true
			name := strings.Repeat("  ", i) + segs[i]
			if k, ok := byPath[p]; ok {
				ag := &shown[k]
				prov := ag.Provider
				if ag.Model != "" {
					prov += "/" + ag.Model
				}
				rows = append(rows, row{name: name, agent: ag, cells: []string{string(ag.State) + exitSuffix(*ag), prov,
					core.FormatAge(now.Sub(ag.CreatedAt)), core.FormatTokens(ag.Usage), core.FormatCost(*ag), core.WaitsOn(*ag)}})
			} else {
				rows = append(rows, row{name: name + "/"})
			}
		}
	}
	widths := make([]int, len(topCols)+1)
	widths[0] = len("PATH")
	for i, c := range topCols {
		widths[i+1] = ansi.StringWidth(c)
	}
	for _, r := range rows {
		widths[0] = max(widths[0], ansi.StringWidth(r.name))
		for i, c := range r.cells {
			widths[i+1] = max(widths[i+1], ansi.StringWidth(c))
		}
	}
	pad := func(s string, w int) string { return s + strings.Repeat(" ", max(0, w-ansi.StringWidth(s))) }
	join := func(cells []string, style func(i int, s string) string) string {
		var b strings.Builder
		for i, c := range cells {
			if i > 0 {
				b.WriteString("  ")
			}
			if i < len(cells)-1 {
				c = pad(c, widths[i])
			}
			b.WriteString(style(i, c))
		}
		return strings.TrimRight(b.String(), " ")
	}
	plain := func(_ int, s string) string { return s }
	head := join(append([]string{"PATH"}, topCols...), plain)
	if scr.color {
		summary, head = "\x1b[1m"+summary+"\x1b[0m", "\x1b[1m"+head+"\x1b[0m"
	}
	out := []string{summary, head}
	for _, r := range rows {
		if r.agent == nil {
			out = append(out, r.name)
			continue
		}
		style := plain
		if scr.color {
			sgr := stateSGR(*r.agent)
			style = func(i int, s string) string {
				switch {
				case sgr == "":
					return s
				case i == 1, sgr == "2": // the state, or the whole row of an ended agent
					return "\x1b[" + sgr + "m" + s + "\x1b[0m"
				}
				return s
			}
		}
		out = append(out, join(append([]string{r.name}, r.cells...), style))
	}
	if !scr.tty {
		return out
	}
	// On a terminal the frame never scrolls: at most height-1 lines (the cursor rests
	// on the last), each no wider than the window.
	if limit := max(3, scr.height-1); len(out) > limit {
		more := len(out) - (limit - 1)
		out = append(out[:limit-1], fmt.Sprintf("… %d more lines (a GLOB narrows the tree: orcr top 'proj/**')", more))
	}
	for i, l := range out {
		out[i] = ansi.Truncate(l, max(1, scr.width-1), "…")
	}
	return out
}

// stateSGR is the colour of an agent's state: what needs the user stands out, what
// ended recedes.
func stateSGR(a wire.Agent) string {
	switch {
	case core.Failed(a):
		return "31"
	case a.State == wire.StateBlocked:
		return "1;33"
	case a.State == wire.StateWorking || a.State == wire.StateStarting:
		return "32"
	case a.State == wire.StateQueued:
		return "34"
	case a.State.Terminal() || a.State == wire.StateHibernated:
		return "2"
	}
	return ""
}
