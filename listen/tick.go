package listen

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// Poll is what a source returned for one tick.
type Poll struct {
	Events  []Event // oldest first
	Cursor  Cursor  // where the source would continue after all of them
	Warning string  // something worth recording that is not a failure (garbage lines)
}

// Poller is a source: given the stored cursor, what is there now.
type Poller interface {
	Poll(ctx context.Context, cursor Cursor) (Poll, error)
}

// Poll runs the command; a shell source has no cursor (dedup by id does its work).
func (s ShellSource) Poll(ctx context.Context, cursor Cursor) (Poll, error) {
	run, err := s.Run(ctx)
	if err != nil {
		return Poll{Warning: run.Warning()}, err
	}
	return Poll{Events: run.Events, Cursor: cursor, Warning: run.Warning()}, nil
}

// Dispatcher carries out a listener's action for one event.
type Dispatcher interface {
	// Dispatch runs the action (spawns the agent at target, or drafts the plan).
	Dispatch(ctx context.Context, l Listener, e Event, target string) error
	// Done says whether a dispatch begun before a restart took effect, e.g. whether an
	// agent holds its target path, so it is neither repeated nor forgotten.
	Done(ctx context.Context, d Dispatch) (bool, error)
}

// Ticker runs one listener's ticks over its records. It is not safe for concurrent
// use: one goroutine owns a listener.
type Ticker struct {
	Listener   Listener
	Records    *Records
	Source     Poller
	Dispatcher Dispatcher
	Now        func() time.Time // default time.Now
	// Backoff is the wait after n consecutive failed ticks — a poll or an action that
	// failed (default: the interval doubling per failure, at most 30 minutes).
	Backoff func(now time.Time, err error, failures int, interval time.Duration) time.Duration
}

// TickResult says what a tick did.
type TickResult struct {
	Skipped    string // why it did not poll: "disabled", "not due", "at a rate ceiling"
	Polled     bool
	Seen       int // events the source returned, new or not
	New        int // of them, ones neither processed nor held before
	Dispatched int
	Held       int
	NextPoll   time.Time
	Err        error // the poll's or a dispatch's failure, also recorded in the state
}

func (t *Ticker) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

func defaultBackoff(_ time.Time, _ error, failures int, interval time.Duration) time.Duration {
	d := interval
	for i := 1; i < failures && d < 30*time.Minute; i++ {
		d *= 2
	}
	return min(d, max(interval, 30*time.Minute))
}

// Tick polls the source once (unless disabled, not yet due, or at a rate ceiling) and
// dispatches what is new, oldest first, as far as the rate limits allow. What does not
// fit is held: kept in the state, not marked processed, and the cursor does not move
// past it, so rate limits change the pace and never drop work. Each dispatch is
// written as an intent before the action and marked processed after it, so a crash
// at any point neither loses nor repeats one (settle runs first on the next tick).
// The error is returned only for store failures; source and action failures are in the
// result and the state.
func (t *Ticker) Tick(ctx context.Context) (TickResult, error) {
	l, name := t.Listener, t.Listener.Name
	now := t.now()
	st, err := t.Records.State(ctx, name)
	if err != nil {
		return TickResult{}, err
	}
	if st.Disabled {
		return TickResult{Skipped: "disabled"}, nil
	}
	if !st.NextPoll.IsZero() && now.Before(st.NextPoll) {
		return TickResult{Skipped: "not due", NextPoll: st.NextPoll, Held: len(st.Held)}, nil
	}
	lim := NewLimiter(l.RateLimits, st.Dispatches)
	if err := t.settle(ctx, &st, lim); err != nil {
		return TickResult{}, err
	}
	if !lim.Allow(now) {
		st.NextPoll = later(now.Add(l.Interval), lim.NextAt(now))
		st.Dispatches = lim.Times(now)
		res := TickResult{Skipped: "at a rate ceiling", Held: len(st.Held), NextPoll: st.NextPoll}
		return res, t.Records.PutState(ctx, name, st)
	}

	res := TickResult{Polled: true}
	poll, perr := t.Source.Poll(ctx, st.Cursor)
	if ctx.Err() != nil {
		// The server is stopping: a poll cut short is not the source's failure, and
		// nothing of it is recorded (the next start polls again).
		return res, ctx.Err()
	}
	st.LastPoll = now
	if poll.Warning != "" {
		st.LastError, st.ErrorAt = poll.Warning, now
	}
	backoff := t.Backoff
	if backoff == nil {
		backoff = defaultBackoff
	}
	if perr != nil {
		st.Failures++
		st.LastError, st.ErrorAt = perr.Error(), now
		st.NextPoll = now.Add(backoff(now, perr, st.Failures, l.Interval))
		res.Err, res.Held, res.NextPoll = perr, len(st.Held), st.NextPoll
		return res, t.Records.PutState(ctx, name, st)
	}
	failures := st.Failures // a failing action keeps counting across polls that work
	st.Failures = 0
	res.Seen = len(poll.Events)

	// Candidates: held events first (they came earlier), then what is new.
	queue := slices.Clone(st.Held)
	inQueue := map[string]bool{}
	for _, e := range queue {
		inQueue[e.ID] = true
	}
	complete := true // every event the poll returned is in the queue
	for _, e := range poll.Events {
		if inQueue[e.ID] {
			continue
		}
		done, err := t.Records.IsProcessed(ctx, name, e.ID)
		if err != nil {
			return res, err
		}
		if done {
			continue
		}
		if len(queue) >= MaxHeld {
			complete = false
			break
		}
		inQueue[e.ID] = true
		queue = append(queue, withCommonVars(l, e))
		res.New++
	}

	var derr error
	rejected := false
	for len(queue) > 0 && lim.Allow(now) {
		e := queue[0]
		target, err := t.target(e)
		if err != nil {
			// The event cannot name a target (a shell event without a var the template
			// uses): no retry can fix it, so it is recorded as processed with the reason
			// instead of blocking every event behind it.
			st.LastError, st.ErrorAt = fmt.Sprintf("event %s: %v", e.ID, err), now
			rejected = true
			st.Held = slices.Clone(queue[1:])
			if err := t.Records.PutState(ctx, name, st); err != nil {
				return res, err
			}
			if err := t.Records.MarkProcessed(ctx, name, e.ID, Processed{At: now, Error: err.Error()}); err != nil {
				return res, err
			}
			queue = queue[1:]
			continue
		}
		err = t.dispatch(ctx, &st, lim, e, target, now, queue[1:])
		if err != nil {
			if isStoreErr(err) {
				return res, err
			}
			derr = fmt.Errorf("dispatch %s: %w", e.ID, err)
			break
		}
		queue = queue[1:]
		res.Dispatched++
	}
	st.Held = queue
	if len(queue) == 0 && complete && derr == nil {
		st.Cursor = poll.Cursor
	}
	st.Dispatches = lim.Times(now)
	st.NextPoll = now.Add(l.Interval)
	if derr != nil {
		// The action fails (the agent service refuses, a role is missing, the plan's
		// name is taken): the event and those behind it are held, and the next
		// attempt backs off as a failing poll does.
		st.Failures = failures + 1
		st.LastError, st.ErrorAt = derr.Error(), now
		st.NextPoll = now.Add(backoff(now, derr, st.Failures, l.Interval))
		res.Err = derr
	} else if poll.Warning == "" && !rejected {
		st.LastError = ""
	}
	if len(queue) > 0 && !lim.Allow(now) {
		st.NextPoll = later(st.NextPoll, lim.NextAt(now))
	}
	res.Held, res.NextPoll = len(queue), st.NextPoll
	return res, t.Records.PutState(ctx, name, st)
}

// storeErr marks failures of the records, which end a tick (the next one retries from
// what was stored), apart from an action's failure, which holds its event.
type storeErr struct{ error }

func (e storeErr) Unwrap() error { return e.error }

func isStoreErr(err error) bool {
	_, ok := err.(storeErr)
	return ok
}

// dispatch runs one event: intent, action, then the state (with the dispatch time and
// without the event) and the processed mark.
func (t *Ticker) dispatch(ctx context.Context, st *State, lim *Limiter, e Event, target string, now time.Time, rest []Event) error {
	name := t.Listener.Name
	d := Dispatch{Event: e, Target: target, At: now, Plan: t.Listener.Action.IsPlan()}
	if err := t.Records.BeginDispatch(ctx, name, d); err != nil {
		return storeErr{err}
	}
	if err := t.Dispatcher.Dispatch(ctx, t.Listener, e, target); err != nil {
		if ctx.Err() != nil {
			// Stopping mid-spawn: whether it took effect is unknown, so the intent stays
			// for the next start to settle.
			return storeErr{ctx.Err()}
		}
		_ = t.Records.s.Delete(ctx, BucketDispatches, eventKey(name, e.ID))
		return err
	}
	lim.Record(now)
	st.Fires++
	st.Counted = e.ID
	st.Held = slices.Clone(rest)
	st.Dispatches = lim.Times(now)
	if err := t.Records.PutState(ctx, name, *st); err != nil {
		return storeErr{err}
	}
	if err := t.Records.MarkProcessed(ctx, name, e.ID, Processed{At: now, Target: target}); err != nil {
		return storeErr{err}
	}
	return nil
}

// settle finishes dispatches a crash interrupted: one that took effect is marked
// processed (its time counted once); one that did not goes back to the front of the
// held events, to be dispatched again.
func (t *Ticker) settle(ctx context.Context, st *State, lim *Limiter) error {
	name := t.Listener.Name
	pending, err := t.Records.PendingDispatches(ctx, name)
	if err != nil {
		return err
	}
	for _, d := range pending {
		done, err := t.Dispatcher.Done(ctx, d)
		if err != nil {
			return fmt.Errorf("settle dispatch %s: %w", d.Event.ID, err)
		}
		if done {
			if st.Counted != d.Event.ID {
				lim.Record(d.At)
				st.Fires++
				st.Counted = d.Event.ID
			}
			st.Held = slices.DeleteFunc(st.Held, func(e Event) bool { return e.ID == d.Event.ID })
			st.Dispatches = lim.Times(t.now())
			if err := t.Records.PutState(ctx, name, *st); err != nil {
				return err
			}
			if err := t.Records.MarkProcessed(ctx, name, d.Event.ID, Processed{At: d.At, Target: d.Target}); err != nil {
				return err
			}
			continue
		}
		if !slices.ContainsFunc(st.Held, func(e Event) bool { return e.ID == d.Event.ID }) {
			st.Held = append([]Event{d.Event}, st.Held...)
		}
		if err := t.Records.PutState(ctx, name, *st); err != nil {
			return err
		}
		if err := t.Records.s.Delete(ctx, BucketDispatches, eventKey(name, d.Event.ID)); err != nil {
			return err
		}
	}
	return nil
}

// target renders the action's path (or, for a plan, its title) for an event.
func (t *Ticker) target(e Event) (string, error) {
	a := t.Listener.Action
	if a.IsPlan() {
		return a.Plan.RenderName(e.Vars)
	}
	return a.Path.RenderPath(e.Vars)
}

func withCommonVars(l Listener, e Event) Event {
	vars := make(map[string]string, len(e.Vars)+3)
	for k, v := range e.Vars {
		vars[k] = v
	}
	vars["id"], vars["listener"], vars["source"] = e.ID, l.Name, l.Source.Type
	e.Vars = vars
	return e
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
