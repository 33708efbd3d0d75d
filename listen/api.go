package listen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sort"
	"time"

	"orcr/core/wire"
	listenapi "orcr/listen/api"
)

// The service's API (served by methods.go) and its dispatcher.

// Listeners lists every listener, runnable or not, by name.
func (s *Service) Listeners(ctx context.Context) ([]listenapi.Listener, error) {
	s.mu.Lock()
	es := make([]entry, 0, len(s.ls))
	for _, e := range s.ls {
		es = append(es, *e)
	}
	disabled := maps.Clone(s.disabled)
	s.mu.Unlock()
	sort.Slice(es, func(i, j int) bool { return es[i].name < es[j].name })
	out := make([]listenapi.Listener, 0, len(es))
	for i := range es {
		v, err := s.view(ctx, &es[i], disabled[es[i].name], false)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func (s *Service) entryCopy(name string) (entry, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.ls[name]
	if !ok {
		return entry{}, false, wire.Errorf(wire.CodeNotFound, "no listener named %q; see orcr listener ls (files go in %s)", name, s.opts.Dir)
	}
	return *e, s.disabled[name], nil
}

// ListenerGet returns one listener with its document, cursors and held events.
func (s *Service) ListenerGet(ctx context.Context, name string) (listenapi.Listener, error) {
	e, disabled, err := s.entryCopy(name)
	if err != nil {
		return listenapi.Listener{}, err
	}
	return s.view(ctx, &e, disabled, true)
}

// ListenerPut stores a document written through the API and runs it. One that does not
// parse is refused with its line (nothing is stored); a name held by a file is refused.
func (s *Service) ListenerPut(ctx context.Context, p listenapi.ListenerPutParams) (listenapi.Listener, error) {
	if err := ValidateName(p.Name); err != nil {
		return listenapi.Listener{}, wire.Errorf(wire.CodeInvalidParams, "%v", err)
	}
	l, err := Parse(p.Name, []byte(p.Document))
	if err != nil {
		return listenapi.Listener{}, wire.Errorf(wire.CodeInvalidParams, "%v", err)
	}
	s.mu.Lock()
	if e := s.ls[p.Name]; e != nil && e.origin == "file" {
		s.mu.Unlock()
		return listenapi.Listener{}, &wire.Error{Code: wire.CodeNameTaken,
			Message: fmt.Sprintf("listener %s comes from the file %s; edit that file, or pick another name", p.Name, e.file)}
	}
	b, _ := json.Marshal(apiDoc{Document: p.Document, UpdatedAt: s.opts.Now().UTC()})
	if err := s.st.Put(ctx, BucketDocs, p.Name, b); err != nil {
		s.mu.Unlock()
		return listenapi.Listener{}, fmt.Errorf("store listener %s: %w", p.Name, err)
	}
	s.setLocked(ctx, p.Name, "api", "", p.Document, l, nil)
	s.mu.Unlock()
	return s.ListenerGet(ctx, p.Name)
}

// ListenerRemove removes a listener written through the API. A file's listener is
// removed by deleting the file (the server notices within its rescan).
func (s *Service) ListenerRemove(ctx context.Context, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.ls[name]
	if !ok {
		return wire.Errorf(wire.CodeNotFound, "no listener named %q; see orcr listener ls", name)
	}
	if e.origin == "file" {
		return wire.Errorf(wire.CodeInvalidParams, "listener %s comes from the file %s; delete the file to remove it (or disable it: orcr listener disable %s)", name, e.file, name)
	}
	if err := s.st.Delete(ctx, BucketDocs, name); err != nil && !errors.Is(err, wire.ErrNotFound) {
		return fmt.Errorf("remove listener %s: %w", name, err)
	}
	s.removeLocked(ctx, name, e)
	return nil
}

// ListenerEnable enables or disables a listener; the setting is stored and survives
// restarts and edits of its file.
func (s *Service) ListenerEnable(ctx context.Context, name string, enabled bool) (listenapi.Listener, error) {
	s.mu.Lock()
	if _, ok := s.ls[name]; !ok {
		s.mu.Unlock()
		return listenapi.Listener{}, wire.Errorf(wire.CodeNotFound, "no listener named %q; see orcr listener ls", name)
	}
	var err error
	if enabled {
		err = s.st.Delete(ctx, BucketDisabled, name)
		if errors.Is(err, wire.ErrNotFound) {
			err = nil
		}
	} else {
		err = s.st.Put(ctx, BucketDisabled, name, []byte("1"))
	}
	if err != nil {
		s.mu.Unlock()
		return listenapi.Listener{}, fmt.Errorf("listener %s: %w", name, err)
	}
	s.disabled[name] = !enabled
	if enabled {
		delete(s.disabled, name)
		// Enabling a listener that is backing off retries it now: the way to say
		// "I fixed it" (the role file, the repo's access) without waiting up to 30m.
		s.retryNowLocked(ctx, name)
	}
	s.mu.Unlock()
	s.kick()
	s.log.Info("listener enabled", "name", name, "enabled", enabled)
	return s.ListenerGet(ctx, name)
}

// RetryGitHub makes every failing github listener poll now: the GitHub client
// changed (a reload brought another token or api_url).
func (s *Service) RetryGitHub(ctx context.Context) {
	s.mu.Lock()
	for name, e := range s.ls {
		if e.ticker != nil && e.l.Source.Type != "shell" {
			s.retryNowLocked(ctx, name)
		}
	}
	s.mu.Unlock()
	s.kick()
}

// retryNowLocked brings a failing listener's next tick forward to now. A listener
// at a rate ceiling, or simply between polls, is left alone.
func (s *Service) retryNowLocked(ctx context.Context, name string) {
	st, err := s.rec.State(ctx, name)
	if err != nil || st.Failures == 0 {
		return
	}
	now := s.opts.Now()
	if st.NextPoll.After(now) {
		st.NextPoll = now
		if err := s.rec.PutState(ctx, name, st); err != nil {
			s.log.Warn("listener retry", "name", name, "err", err)
			return
		}
	}
	if e := s.ls[name]; e != nil && e.next.After(now) {
		e.next = now
	}
}

// view is a listener as the API shows it.
func (s *Service) view(ctx context.Context, e *entry, disabled, full bool) (listenapi.Listener, error) {
	v := listenapi.Listener{Name: e.name, Origin: e.origin, File: e.file, State: "enabled",
		Repos: []string{}, RateLimits: []listenapi.RateStanding{}}
	if disabled {
		v.State = "disabled"
	}
	if e.err != nil {
		v.State, v.Error = "invalid", e.err.Error()
	} else {
		l := e.l
		v.Source, v.Command, v.IntervalSeconds = l.Source.Type, l.Source.Command, int(l.Interval/time.Second)
		v.Repos = append(v.Repos, l.Source.Repos...)
		v.Action = actionSummary(l.Action)
	}
	if full {
		v.Document = e.doc
	}
	st, err := s.rec.State(ctx, e.name)
	if err != nil {
		return v, err
	}
	ptr := func(t time.Time) *time.Time {
		if t.IsZero() {
			return nil
		}
		t = t.UTC()
		return &t
	}
	v.LastPoll, v.NextPoll, v.ErrorAt = ptr(st.LastPoll), ptr(st.NextPoll), ptr(st.ErrorAt)
	if v.NextPoll == nil && e.err == nil && !disabled {
		v.NextPoll = ptr(e.next)
	}
	v.Fires, v.Held, v.LastError, v.Failures = st.Fires, st.HeldCount+len(st.Held), st.LastError, st.Failures
	v.Failed, v.LastFailed, v.FailedAt = st.Failed, st.LastFailed, ptr(st.FailedAt)
	if e.err == nil {
		now := s.opts.Now()
		for _, sd := range NewLimiter(e.l.RateLimits, st.Dispatches).Standings(now) {
			rs := listenapi.RateStanding{Max: sd.Max, Per: sd.Text, Used: sd.Used, NextAt: ptr(sd.NextAt), Text: sd.String()}
			v.RateLimits = append(v.RateLimits, rs)
		}
	}
	if full {
		v.Cursor = st.Cursor
		for _, h := range st.Held {
			v.HeldIDs = append(v.HeldIDs, h.ID)
		}
		// The oldest maxHeldIDs are named; Held is the count of them all.
		held, err := s.rec.held(ctx, e.name, maxHeldIDs)
		if err != nil {
			return v, err
		}
		for _, h := range held {
			if len(v.HeldIDs) < maxHeldIDs {
				v.HeldIDs = append(v.HeldIDs, h.Event.ID)
			}
		}
	}
	return v, nil
}

// maxHeldIDs bounds the held ids listener.get names (a listener may hold thousands).
const maxHeldIDs = 100

func actionSummary(a Action) string {
	if a.IsPlan() {
		return "plan " + a.Plan.Text
	}
	if a.IsWorkflow() {
		return "workflow " + a.Workflow
	}
	who := a.Provider
	if a.Role != "" {
		who = "role " + a.Role
	} else if a.Model != "" {
		who += "/" + a.Model
	}
	return "agent " + a.Path.Text + " (" + who + ")"
}
