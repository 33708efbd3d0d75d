package ui

import (
	"context"
	"time"

	tea "charm.land/bubbletea/v2"

	"orcr/core/wire"
	schedapi "orcr/schedule/api"
	webapi "orcr/web/api"
)

// Every call happens in a command built here. Commands capture the values they
// need (the service, a context, ids, params), never the model, and return one typed message.

type (
	infoMsg struct {
		info wire.InfoResult
		err  error
	}
	listMsg struct {
		agents []wire.Agent
		err    error
	}
	subscribedMsg struct {
		ch    <-chan wire.Event
		after uint64
		err   error
	}
	// eventsMsg carries one or more events drained from the subscription at once, so a
	// burst costs one render.
	eventsMsg struct {
		ch     <-chan wire.Event
		events []wire.Event
	}
	subEndedMsg    struct{}
	resubscribeMsg struct{}
	readMsg        struct {
		id  string
		res wire.ReadResult
		err error
		// lines is how many lines the read asked for (0: as many as the preview
		// wants now), so a late answer to a shallower read is not taken for the end
		// of the agent's scrollback.
		lines int
	}
	queueMsg struct {
		q   wire.QueueResult
		err error
	}
	usageMsg struct {
		u   wire.UsageResult
		err error
	}
	schedulesMsg struct {
		s   []schedapi.Schedule
		err error
	}
	dryRunMsg struct {
		glob   string
		agents []wire.Agent
		err    error
	}
	sentMsg struct {
		target string
		err    error
		text   string // what was to be typed: a refused steer goes on in the answer dialog
	}
	spawnedMsg struct {
		agent wire.Agent
		err   error
	}
	attachMsg struct {
		id  string
		res wire.AttachResult
		err error
	}
	attachDoneMsg struct {
		id  string
		err error
	}
	tickMsg    time.Time
	refreshMsg time.Time
	webMsg     struct {
		st  webapi.StatusResult
		err error
	}
)

// webStatusCmd reads the web gateway's address and paired browsers (web.status); a
// server without the web feature answers unknown_method and the bar shows nothing.
func webStatusCmd(ctx context.Context, svc wire.Transport) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		st, err := wire.Call(ctx, svc, webapi.Status, wire.Empty{})
		return webMsg{st, err}
	}
}

// callTimeout bounds every request/response call, so a wedged server shows an error
// instead of a spinner forever.
const callTimeout = 10 * time.Second

func infoCmd(ctx context.Context, svc wire.Transport) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		i, err := wire.Call(ctx, svc, wire.Info, wire.Empty{})
		return infoMsg{i, err}
	}
}

func listCmd(ctx context.Context, svc wire.Transport) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		a, err := wire.ListAgents(ctx, svc, wire.ListParams{All: true})
		return listMsg{a, err}
	}
}

func subscribeCmd(ctx context.Context, svc wire.Transport, after uint64) tea.Cmd {
	return func() tea.Msg {
		ch, err := wire.Subscribe(ctx, svc, wire.SubscribeParams{After: after, Transient: true})
		return subscribedMsg{ch, after, err}
	}
}

// maxBatch caps how many queued events one message carries; batchWindow is how long
// the command keeps collecting after the first event. A fleet that changes all the time
// then costs the dashboard at most one update and frame per window, not one per event.
const (
	maxBatch    = 512
	batchWindow = 100 * time.Millisecond
)

// waitEvents is the one re-arming subscription command: it blocks for the next event,
// collects what else arrives within batchWindow, and returns them together; Update
// re-arms it.
func waitEvents(ch <-chan wire.Event) tea.Cmd {
	return func() tea.Msg {
		ev, ok := <-ch
		if !ok {
			return subEndedMsg{}
		}
		evs := []wire.Event{ev}
		timer := time.NewTimer(batchWindow)
		defer timer.Stop()
		for len(evs) < maxBatch {
			select {
			case ev, ok := <-ch:
				if !ok {
					return eventsMsg{ch, evs}
				}
				evs = append(evs, ev)
			case <-timer.C:
				return eventsMsg{ch, evs}
			}
		}
		return eventsMsg{ch, evs}
	}
}

func readCmd(ctx context.Context, svc wire.Transport, id string, lines int) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		r, err := wire.Call(ctx, svc, wire.AgentRead, wire.ReadParams{Target: id, Lines: lines, ANSI: true})
		return readMsg{id, r, err, lines}
	}
}

func queueCmd(ctx context.Context, svc wire.Transport) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		q, err := wire.Call(ctx, svc, wire.QueueGet, wire.Empty{})
		return queueMsg{q, err}
	}
}

func usageCmd(ctx context.Context, svc wire.Transport) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		u, err := wire.Call(ctx, svc, wire.UsageGet, wire.UsageParams{})
		return usageMsg{u, err}
	}
}

func schedulesCmd(ctx context.Context, svc wire.Transport) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		sRes, err := wire.Call(ctx, svc, schedapi.ScheduleList, wire.Empty{})
		s := sRes.Schedules
		return schedulesMsg{s, err}
	}
}

func dryRunCmd(ctx context.Context, svc wire.Transport, glob string) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		r, err := wire.Call(ctx, svc, wire.AgentKill, wire.KillParams{Glob: glob, DryRun: true})
		return dryRunMsg{glob, r.Agents, err}
	}
}

func sendCmd(ctx context.Context, svc wire.Transport, p wire.SendParams) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		return sentMsg{target: p.Target, err: wire.Do(ctx, svc, wire.AgentSend, p), text: p.Text}
	}
}

func runCmd(ctx context.Context, svc wire.Transport, p wire.RunParams) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		aRes, err := wire.Call(ctx, svc, wire.AgentRun, p)
		a := aRes.Agent
		return spawnedMsg{a, err}
	}
}

func attachCmd(ctx context.Context, svc wire.Transport, id string, cols, rows int) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		r, err := wire.Attach(ctx, svc, wire.AttachParams{Target: id, Cols: cols, Rows: rows})
		return attachMsg{id, r, err}
	}
}

// queueCancelledMsg answers the cancel of a queued agent.
type queueCancelledMsg struct {
	path string
	err  error
}

func queueCancelCmd(ctx context.Context, svc wire.Transport, q queueCancelMsg) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		_, err := wire.Call(ctx, svc, wire.AgentKill, wire.KillParams{Glob: q.id})
		return queueCancelledMsg{q.path, err}
	}
}

// queuePrioritisedMsg answers a queue.priority call: the agent's new record, or why not.
type queuePrioritisedMsg struct {
	path string
	a    wire.Agent
	err  error
}

func queuePriorityCmd(ctx context.Context, svc wire.Transport, q queuePriorityMsg) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		r, err := wire.Call(ctx, svc, wire.QueuePriority, wire.PriorityParams{Target: q.id, By: q.by})
		return queuePrioritisedMsg{q.path, r.Agent, err}
	}
}

func tickCmd() tea.Cmd {
	return tea.Tick(time.Second, func(t time.Time) tea.Msg { return tickMsg(t) })
}

// refreshEvery is how often the queue, usage and schedules panels are re-read. They are
// three small calls, not a poll of panes.
const refreshEvery = 3 * time.Second

func refreshCmd() tea.Cmd {
	return tea.Tick(refreshEvery, func(t time.Time) tea.Msg { return refreshMsg(t) })
}
