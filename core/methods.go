package core

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"time"

	"orcr/core/wire"
)

// KernelMethods are the kernel's socket methods (server.*, agent.*, events.subscribe,
// hook.report, queue.*, usage.get, gc.run), each its declaration in core/wire paired
// with what serves it. A feature's come from its Methods (Feature); the daemon hands
// both to the socket server and to the dashboard's in-process transport.
func KernelMethods(e *Engine) []wire.Handler {
	return []wire.Handler{
		wire.Handle(wire.Ping, func(context.Context, *wire.Empty) (wire.PingResult, error) {
			return wire.PingResult{Pong: true, Version: wire.Version}, nil
		}),
		wire.Handle(wire.Info, func(ctx context.Context, _ *wire.Empty) (wire.InfoResult, error) { return e.Info(ctx) }),
		wire.Handle(wire.AgentRun, func(ctx context.Context, p *wire.RunParams) (wire.AgentResult, error) {
			a, err := e.Run(ctx, *p)
			return wire.AgentResult{Agent: a}, err
		}),
		wire.Heavy(wire.Handle(wire.AgentList, func(ctx context.Context, p *wire.ListParams) (wire.ListResult, error) {
			return listAgents(ctx, e, p)
		})),
		wire.Handle(wire.AgentRestart, func(ctx context.Context, p *wire.TargetParams) (wire.AgentResult, error) {
			return restartAgent(ctx, e, *p)
		}),
		wire.Handle(wire.AgentFork, func(ctx context.Context, p *wire.ForkParams) (wire.AgentResult, error) {
			return forkAgent(ctx, e, *p)
		}),
		wire.Handle(wire.AgentRename, func(ctx context.Context, p *wire.RenameParams) (wire.AgentResult, error) {
			a, err := renameAgent(ctx, e, *p)
			return wire.AgentResult{Agent: a}, err
		}),
		wire.Handle(wire.AgentGet, func(ctx context.Context, p *wire.TargetParams) (wire.AgentResult, error) {
			a, err := e.Get(ctx, p.Target)
			return wire.AgentResult{Agent: a}, err
		}),
		wire.Handle(wire.AgentSend, func(ctx context.Context, p *wire.SendParams) (wire.Empty, error) {
			return wire.Empty{}, e.Send(ctx, *p)
		}),
		wire.Handle(wire.AgentAnswer, func(ctx context.Context, p *wire.AnswerParams) (wire.AnswerResult, error) {
			return e.Answer(ctx, *p)
		}),
		wire.Handle(wire.AgentRead, func(ctx context.Context, p *wire.ReadParams) (wire.ReadResult, error) {
			return e.Read(ctx, *p)
		}),
		wire.Handle(wire.AgentDiff, func(ctx context.Context, p *wire.DiffParams) (wire.DiffResult, error) {
			a, err := e.Get(ctx, p.Target)
			if err != nil {
				return wire.DiffResult{}, err
			}
			return agentDiff(ctx, a, p.MaxBytes)
		}),
		wire.Handle(wire.AgentWait, func(ctx context.Context, p *wire.WaitParams) (wire.WaitResult, error) {
			return e.Wait(ctx, *p)
		}),
		wire.Handle(wire.AgentKill, func(ctx context.Context, p *wire.KillParams) (wire.KillResult, error) {
			return e.Kill(ctx, *p)
		}),
		wire.Handle(wire.AgentResize, func(ctx context.Context, p *wire.ResizeParams) (wire.Empty, error) {
			return wire.Empty{}, e.Resize(ctx, *p)
		}),
		wire.HandleStream(wire.AgentAttach, func(ctx context.Context, p *wire.AttachParams, c wire.StreamConn) bool {
			return serveAttach(ctx, e, p, c)
		}),
		wire.HandleStream(wire.EventsSubscribe, func(ctx context.Context, p *wire.SubscribeParams, c wire.StreamConn) bool {
			serveEvents(ctx, e, p, c)
			return true // the connection is dedicated to the stream from here on
		}),
		wire.Handle(wire.HookReport, func(ctx context.Context, p *wire.HookParams) (wire.Empty, error) {
			return wire.Empty{}, e.Hook(ctx, *p)
		}),
		wire.Handle(wire.QueueGet, func(ctx context.Context, _ *wire.Empty) (wire.QueueResult, error) { return e.Queue(ctx) }),
		wire.Handle(wire.UsageGet, func(ctx context.Context, p *wire.UsageParams) (wire.UsageResult, error) {
			return e.Usage(ctx, *p)
		}),
		wire.Handle(wire.QueueCaps, func(ctx context.Context, p *wire.CapsParams) (wire.QueueResult, error) {
			return e.SetCaps(ctx, *p)
		}),
		wire.Handle(wire.QueuePriority, func(ctx context.Context, p *wire.PriorityParams) (wire.AgentResult, error) {
			a, err := reprioritise(ctx, e, *p)
			return wire.AgentResult{Agent: a}, err
		}),
		wire.Handle(wire.GCRun, func(ctx context.Context, p *wire.GCParams) (wire.GCResult, error) { return e.GC(ctx, *p) }),
		wire.Handle(wire.AgentResume, func(ctx context.Context, p *wire.ResumeParams) (wire.AgentResult, error) {
			a, err := e.Resume(ctx, *p)
			return wire.AgentResult{Agent: a}, err
		}),
	}
}

// listAgents answers agent.list: one page of the list, as records or as display rows
// (like kubectl's server-side printing: a terminal client then decodes a few short
// strings per agent instead of whole records).
func listAgents(ctx context.Context, e *Engine, p *wire.ListParams) (wire.ListResult, error) {
	as, err := e.List(ctx, *p)
	var next string
	if err == nil && len(p.States) > 0 {
		as, err = inStates(as, p.States)
	}
	if err == nil {
		as, next = page(as, p.After, p.Limit)
	}
	if as == nil {
		as = []wire.Agent{}
	}
	if p.Table && err == nil {
		t := &wire.Table{Columns: TableColumns, Rows: make([][]string, 0, len(as))}
		now := time.Now()
		for _, a := range as {
			t.Rows = append(t.Rows, TableRow(a, now))
		}
		withNodeColumn(t, as)
		return wire.ListResult{Agents: []wire.Agent{}, Table: t, Next: next}, nil
	}
	return wire.ListResult{Agents: as, Next: next}, err
}

// inStates keeps the agents in one of states (in place), refusing a state that does
// not exist with the list of those that do.
func inStates(as []wire.Agent, states []wire.State) ([]wire.Agent, error) {
	for _, s := range states {
		if !slices.Contains(wire.AllStates, s) {
			names := make([]string, len(wire.AllStates))
			for i, x := range wire.AllStates {
				names[i] = string(x)
			}
			return nil, wire.Errorf(wire.CodeInvalidParams, "unknown state %q; the states are %s", s, strings.Join(names, ", "))
		}
	}
	out := as[:0:0]
	for _, a := range as {
		if slices.Contains(states, a.State) {
			out = append(out, a)
		}
	}
	return out, nil
}

// serveEvents answers events.subscribe and streams the events until the client goes.
func serveEvents(ctx context.Context, e *Engine, p *wire.SubscribeParams, c wire.StreamConn) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch, err := e.Subscribe(ctx, *p)
	if err != nil {
		c.Reply(nil, err)
		return
	}
	info, _ := e.Info(ctx)
	c.Reply(wire.SubscribeResult{Subscribed: true, LastSeq: info.LastSeq}, nil)
	// The client never sends on a stream; the end of its side means it went away.
	go func() {
		for {
			if _, err := c.ReadLine(); err != nil {
				cancel()
				return
			}
		}
	}()
	for ev := range ch {
		if err := c.Send(ev); err != nil {
			return
		}
	}
}

// serveAttach answers agent.attach. For a stream attach it turns the connection into an
// AttachFrame stream and returns true when the connection is used up.
func serveAttach(ctx context.Context, e *Engine, p *wire.AttachParams, c wire.StreamConn) bool {
	res, err := e.Attach(ctx, *p)
	if err != nil || !res.Stream {
		c.Reply(res, err)
		return false
	}
	c.Reply(res, nil)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pr, pw := io.Pipe()
	go func() {
		defer pw.Close()
		for {
			// Frames are lines bounded like requests: a 400 MiB frame without a newline
			// was buffered whole by a JSON decoder.
			line, err := c.ReadLine()
			var f wire.AttachFrame
			if err == nil {
				err = json.Unmarshal(line, &f)
			}
			if err == nil && wire.CheckRanges("attach frame", &f) != nil {
				continue // a resize to 100000 columns is dropped, the attach goes on
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					e.log.Warn("attach frame unreadable; ending the attach", "err", err)
				}
				cancel()
				return
			}
			if f.Cols > 0 && f.Rows > 0 {
				_ = e.Resize(ctx, wire.ResizeParams{Target: res.Agent.ID, Cols: f.Cols, Rows: f.Rows})
			}
			if len(f.Data) > 0 {
				if _, err := pw.Write(f.Data); err != nil {
					return
				}
			}
		}
	}()
	err = e.AttachStream(ctx, wire.AttachParams{Target: res.Agent.ID, Cols: p.Cols, Rows: p.Rows}, pr, frameWriter{c})
	_ = c.Send(wire.AttachFrame{Closed: true})
	if err != nil {
		e.log.Debug("attach stream ended", "err", err)
	}
	return true
}

type frameWriter struct{ c wire.StreamConn }

func (w frameWriter) Write(b []byte) (int, error) {
	data := append([]byte(nil), b...)
	if err := w.c.Send(wire.AttachFrame{Data: data}); err != nil {
		return 0, err
	}
	return len(b), nil
}
