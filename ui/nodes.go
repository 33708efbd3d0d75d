package ui

import (
	"context"
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"orcr/core"
	"orcr/core/wire"
	nodeapi "orcr/nodes/api"
)

// The nodes tab of the side panel (DESIGN §14): each node's state, agents of its
// cap, free memory, orcr version and when it last answered. The tab is there only
// while the server has nodes (a user with none sees the panel as it always was). Like
// the other panels it is re-read on the refresh tick; Update only asks for the call.

type nodesMsg struct {
	ns  []nodeapi.Node
	err error
}

func nodesCmd(ctx context.Context, svc wire.Transport) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		r, err := wire.Call(ctx, svc, nodeapi.List, wire.Empty{})
		return nodesMsg{r.Nodes, err}
	}
}

type nodesView struct {
	ns  []nodeapi.Node
	err string
}

func (v *nodesView) set(ns []nodeapi.Node, err error) {
	if err != nil {
		// A server without the nodes feature has no tab; an error keeps the last list.
		v.err = err.Error()
		return
	}
	v.ns, v.err = ns, ""
}

// lines draws one row per node, and its last error under one that is not up.
func (v nodesView) lines(c *common, w int) []string {
	st := &c.styles
	out := []string{st.Subtle.Render(fit(fmt.Sprintf("%-12s %-11s %-7s %9s %-10s %s", "NAME", "STATE", "AGENTS", "FREE MEM", "VERSION", "SEEN"), w))}
	for _, n := range v.ns {
		cap := "-"
		if n.MaxAgents > 0 {
			cap = fmt.Sprint(n.MaxAgents)
		}
		free := "-"
		if n.FreeMB > 0 {
			free = fmt.Sprintf("%d MB", n.FreeMB)
		}
		seen := "never"
		if n.LastSeen != nil {
			seen = core.FormatAge(c.now.Sub(*n.LastSeen)) + " ago"
		}
		stateSt := st.Done
		switch n.State {
		case nodeapi.StateUnreachable:
			stateSt = st.Error
		case nodeapi.StateConnecting, nodeapi.StateDraining:
			stateSt = st.Muted
		}
		if w < 25 {
			out = append(out, fit(n.Name+" "+n.State, w))
			continue
		}
		rest := fit(fmt.Sprintf("%-7s %9s %-10s %s", fmt.Sprintf("%d/%s", n.Agents, cap), free, core.Dash(n.Version), seen), w-25)
		out = append(out, st.Text.Render(fit(n.Name, 12))+" "+stateSt.Render(fit(n.State, 11))+" "+st.Text.Render(rest))
		if n.Error != "" && n.State != nodeapi.StateUp {
			out = append(out, "  "+st.Error.Render(fit(oneLine(n.Error), w-2)))
		}
	}
	if v.err != "" {
		out = append(out, st.Error.Render(fit(oneLine(v.err), w)))
	}
	return out
}
