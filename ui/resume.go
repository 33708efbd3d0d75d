package ui

import (
	"context"

	tea "charm.land/bubbletea/v2"

	"orcr/core"
	"orcr/core/wire"
)

// resumeCmd wakes a hibernated agent (enter on it): its provider's resume of its
// session, in place. The result comes back as a send's, since that is what the user
// did: give the agent its turn again.
func resumeCmd(ctx context.Context, svc core.Service, id string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		_, err := svc.Resume(ctx, wire.ResumeParams{Target: id})
		return sentMsg{id, err}
	}
}
