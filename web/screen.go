package web

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"orcr/core"
	"orcr/core/wire"
)

// Frame is one picture of an agent's live screen as the page draws it: the screen
// rendered to HTML on the server (colours as palette classes, the text escaped), with
// what the agent is doing now.
type Frame struct {
	HTML    string        `json:"html"`
	Cols    int           `json:"cols"`
	Rows    int           `json:"rows"`
	Live    bool          `json:"live"`
	ID      string        `json:"id"`
	Path    string        `json:"path"`
	State   wire.State    `json:"state"`
	Blocked *wire.Blocked `json:"blocked"`
}

// screen serves GET /api/v1/screen?target=X: Server-Sent Events of Frames, one now and
// one each time the screen or the state changes (at most one per ScreenEvery, none
// while nothing changed), until the client leaves.
func (g *gateway) screen(w http.ResponseWriter, r *http.Request) {
	if _, ok := g.authenticate(w, r); !ok {
		return
	}
	target := r.URL.Query().Get("target")
	if target == "" {
		writeError(w, wire.Errorf(wire.CodeInvalidParams, "screen needs ?target=ID or a path"))
		return
	}
	ctx, cancel := context.WithCancel(core.WithCaller(r.Context(), caller()))
	defer cancel()
	a, err := g.s.k.Get(ctx, target)
	if err != nil {
		writeError(w, err)
		return
	}
	ch, err := g.s.k.Subscribe(ctx, wire.SubscribeParams{After: g.s.k.LastSeq(), Paths: []string{a.Path}, Transient: true})
	if err != nil {
		writeError(w, err)
		return
	}
	out, ok := g.open(w, "orcr screen "+a.ID, false)
	if !ok {
		return
	}
	defer g.s.clients.Add(-1)
	var last string
	dirty := true
	tick := time.NewTicker(g.s.screenEvery)
	defer tick.Stop()
	beat := time.NewTicker(g.s.heartbeat)
	defer beat.Stop()
	for {
		if dirty {
			dirty = false
			f, err := g.frame(ctx, a.ID)
			if err == nil {
				b, _ := json.Marshal(f)
				if s := string(b); s != last {
					last = s
					out.event(0, "screen", b)
				}
			}
			if out.flush() != nil {
				return
			}
		}
		// Wait for a change, then let the screen settle for one tick.
		select {
		case <-ctx.Done():
			return
		case <-g.s.stopping:
			return
		case <-beat.C:
			out.comment("heartbeat")
			if out.flush() != nil {
				return
			}
			continue
		case ev, ok := <-ch:
			if !ok {
				return
			}
			if ev.Agent == nil || ev.Agent.ID != a.ID {
				continue
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for drained := false; !drained; {
			select {
			case <-ch:
			default:
				drained = true
			}
		}
		dirty = true
	}
}

// frame reads the agent and its screen with colours and renders it.
func (g *gateway) frame(ctx context.Context, id string) (Frame, error) {
	a, err := g.s.k.Get(ctx, id)
	if err != nil {
		return Frame{}, err
	}
	f := Frame{ID: a.ID, Path: a.Path, State: a.State, Blocked: a.Blocked}
	rd, err := g.s.k.Read(ctx, wire.ReadParams{Target: a.ID, ANSI: true})
	if err != nil {
		f.HTML = ANSIToHTML(a.LastScreen)
		return f, nil
	}
	f.HTML, f.Cols, f.Rows, f.Live = ANSIToHTML(rd.Text), rd.Cols, rd.Rows, rd.Live
	return f, nil
}
