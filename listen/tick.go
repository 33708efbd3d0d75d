package listen

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// Poll is what a source returned for one tick.
type Poll struct {
	Events  []Event // oldest first
	Cursor  Cursor  // where the source would continue after all of them
	Warning string  // something worth recording that is not a failure (garbage lines)
	// Full says Events is everything the source shows now (a shell command that exited
	// 0 with every line readable and under the output cap), so a processed id absent
	// from it may be pruned.
	Full bool
}

// Poller is a source: given the stored cursor, what is there now.
type Poller interface {
	Poll(ctx context.Context, cursor Cursor) (Poll, error)
}

// Shower is a source whose polls are not its full listing (a since cursor narrows
// them) but which knows what else it could still show as new: Shown returns those ids
// (nil when nothing behind its cursor can come back, so only the age and count bounds
// prune what the poll did not show).
type Shower interface {
	Shown(ctx context.Context, cursor Cursor) (map[string]bool, error)
}

// Poll runs the command; a shell source has no cursor (dedup by id does its work), and
// a clean run's output is its whole listing.
func (s ShellSource) Poll(ctx context.Context, cursor Cursor) (Poll, error) {
	run, err := s.Run(ctx)
	if err != nil {
		return Poll{Warning: run.Warning()}, err
	}
	full := run.Garbage == 0 && !run.Truncated
	return Poll{Events: run.Events, Cursor: cursor, Warning: run.Warning(), Full: full}, nil
}

// Dispatcher carries out a listener's action for one event.
type Dispatcher interface {
	// Dispatch runs the action (spawns the agent at target, or drafts the plan). An
	// error that no retry can fix for this event (its vars cannot make a valid prompt
	// or repo) is wrapped with Permanent: the event is failed alone instead of held.
	Dispatch(ctx context.Context, l Listener, e Event, target string) error
	// Done says whether a dispatch begun before a restart took effect, e.g. whether an
	// agent holds its target path, so it is neither repeated nor forgotten.
	Done(ctx context.Context, d Dispatch) (bool, error)
}

// permanentErr marks a dispatch failure that is the event's own and final.
type permanentErr struct{ error }

func (e permanentErr) Unwrap() error { return e.error }

// Permanent marks err as a failure no retry can fix for this event: the tick records
// the event as failed with the reason and goes on with the rest, instead of holding it
// (and every event behind it) forever. Failures of the listener as a whole (a missing
// role, a full queue, a held account, a path still taken) are not permanent: the event
// is held, and goes out once they are fixed.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return permanentErr{err}
}

// IsPermanent says err was marked with Permanent.
func IsPermanent(err error) bool {
	var p permanentErr
	return errors.As(err, &p)
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
	Logger  *slog.Logger // default: discard
	// KeepProcessed and MaxProcessed bound the processed ids the source no longer shows
	// (defaults 30 days and 10,000); PruneEvery is how often a tick prunes them
	// (default an hour, and at the first complete poll of a new Ticker: a server start
	// or an edit).
	KeepProcessed time.Duration
	MaxProcessed  int
	PruneEvery    time.Duration

	prunedAt time.Time
}

// TickResult says what a tick did.
type TickResult struct {
	Skipped    string // why it did not poll: "disabled", "not due", "at a rate ceiling"
	Polled     bool
	Seen       int // events the source returned, new or not
	New        int // of them, ones neither processed nor held before
	Dispatched int
	Failed     int // events set aside for good (Permanent), each recorded with its reason
	Held       int
	Pruned     int // processed ids forgotten (absent from the source's listing, and old)
	NextPoll   time.Time
	Err        error // the poll's or a dispatch's failure, also recorded in the state
}

func (t *Ticker) now() time.Time {
	if t.Now != nil {
		return t.Now()
	}
	return time.Now()
}

func (t *Ticker) log() *slog.Logger {
	if t.Logger != nil {
		return t.Logger
	}
	return slog.New(slog.DiscardHandler)
}

func defaultBackoff(_ time.Time, _ error, failures int, interval time.Duration) time.Duration {
	d := interval
	for i := 1; i < failures && d < 30*time.Minute; i++ {
		d *= 2
	}
	return min(d, max(interval, 30*time.Minute))
}

// Tick polls the source once (unless disabled, not yet due, or at a rate ceiling) and
// dispatches what is new, oldest first, as far as the rate limits allow. Every new event
// is first stored as held (a record of its own, no cap), then dispatched from there;
// what does not fit stays held, not marked processed, and the cursor does not move past
// it, so rate limits change the pace and never drop work. Each dispatch is written as
// an intent before the action and marked processed after it, so a crash at any point
// neither loses nor repeats one (settle runs first on the next tick). An event whose
// dispatch can never succeed is failed alone, with its reason, and the rest go on.
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
		return TickResult{Skipped: "not due", NextPoll: st.NextPoll, Held: st.HeldCount}, nil
	}
	held, err := t.loadHeld(ctx, &st)
	if err != nil {
		return TickResult{}, err
	}
	lim := NewLimiter(l.RateLimits, st.Dispatches)
	if held, err = t.settle(ctx, &st, lim, held); err != nil {
		return TickResult{}, err
	}
	st.HeldCount = len(held)
	if !lim.Allow(now) {
		st.NextPoll = later(now.Add(l.Interval), lim.NextAt(now))
		st.Dispatches = lim.Times(now)
		res := TickResult{Skipped: "at a rate ceiling", Held: st.HeldCount, NextPoll: st.NextPoll}
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
		res.Err, res.Held, res.NextPoll = perr, st.HeldCount, st.NextPoll
		return res, t.Records.PutState(ctx, name, st)
	}
	failures := st.Failures // a failing action keeps counting across polls that work
	st.Failures = 0
	res.Seen = len(poll.Events)

	// Hold what is new, behind the events held before (they came earlier). A store
	// that refuses to hold one more is the only bound, and it is loud: the listener
	// fails with the count held, and the cursor stays so a since source shows the
	// rest again.
	queue := held
	inQueue := make(map[string]bool, len(queue))
	for _, h := range queue {
		inQueue[h.Event.ID] = true
	}
	seq := uint64(0)
	if len(queue) > 0 {
		seq = queue[len(queue)-1].Seq + 1
	}
	var holdErr error
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
		h := HeldEvent{Seq: seq, Event: withCommonVars(l, e)}
		if err := t.Records.Hold(ctx, name, h); err != nil {
			holdErr = fmt.Errorf("%d events held; the store refused to hold %s and the %d after it: %w",
				len(queue), e.ID, countNew(ctx, t.Records, name, poll.Events, inQueue, e.ID), err)
			break
		}
		seq++
		inQueue[e.ID] = true
		queue = append(queue, h)
		res.New++
	}
	st.HeldCount = len(queue)

	var derr error
	for len(queue) > 0 && lim.Allow(now) {
		h := queue[0]
		// An event dispatched just before a crash may still be held (it is unheld
		// after its processed mark): it is done, not dispatched again.
		done, err := t.Records.IsProcessed(ctx, name, h.Event.ID)
		if err != nil {
			return res, err
		}
		if done {
			if err := t.Records.Unhold(ctx, name, h.Seq); err != nil {
				return res, err
			}
			queue = queue[1:]
			st.HeldCount = len(queue)
			continue
		}
		target, err := t.target(h.Event)
		if err == nil {
			err = t.dispatch(ctx, &st, lim, h, target, now, len(queue)-1)
		} else {
			err = Permanent(err)
		}
		switch {
		case err == nil:
			queue = queue[1:]
			res.Dispatched++
			continue
		case isStoreErr(err):
			return res, err
		case IsPermanent(err):
			if err := t.fail(ctx, &st, h, err, now); err != nil {
				return res, err
			}
			queue = queue[1:]
			st.HeldCount = len(queue)
			res.Failed++
			continue
		}
		derr = fmt.Errorf("dispatch %s: %w", h.Event.ID, err)
		break
	}
	st.HeldCount = len(queue)
	if len(queue) == 0 && holdErr == nil && derr == nil {
		st.Cursor = poll.Cursor
	}
	st.Dispatches = lim.Times(now)
	st.NextPoll = now.Add(l.Interval)
	switch {
	case holdErr != nil:
		st.Failures = failures + 1
		st.LastError, st.ErrorAt = holdErr.Error(), now
		st.NextPoll = now.Add(backoff(now, holdErr, st.Failures, l.Interval))
		res.Err = holdErr
		t.log().Error("listener cannot hold more events", "name", name, "held", len(queue), "err", holdErr)
	case derr != nil:
		// The action fails (the agent service refuses, a role is missing, the plan's
		// name is taken): the event and those behind it are held, and the next
		// attempt backs off as a failing poll does.
		st.Failures = failures + 1
		st.LastError, st.ErrorAt = derr.Error(), now
		st.NextPoll = now.Add(backoff(now, derr, st.Failures, l.Interval))
		res.Err = derr
	case poll.Warning == "" && res.Failed == 0:
		st.LastError = ""
	}
	if len(queue) > 0 && !lim.Allow(now) {
		st.NextPoll = later(st.NextPoll, lim.NextAt(now))
	}
	if holdErr == nil {
		t.prune(ctx, &res, poll, st.Cursor, now)
	}
	res.Held, res.NextPoll = len(queue), st.NextPoll
	return res, t.Records.PutState(ctx, name, st)
}

// countNew counts the events of a poll from id on that would have been held, for the
// message of a store that refused to hold them (best effort: a store that refuses
// writes still answers reads).
func countNew(ctx context.Context, r *Records, name string, evs []Event, inQueue map[string]bool, from string) int {
	n, counting := 0, false
	for _, e := range evs {
		if e.ID == from {
			counting = true
			continue
		}
		if !counting || inQueue[e.ID] {
			continue
		}
		if done, err := r.IsProcessed(ctx, name, e.ID); err == nil && !done {
			n++
		}
	}
	return n
}

// loadHeld reads the held events, first moving any an older version kept in the state
// into their bucket.
func (t *Ticker) loadHeld(ctx context.Context, st *State) ([]HeldEvent, error) {
	name := t.Listener.Name
	held, err := t.Records.Held(ctx, name)
	if err != nil || len(st.Held) == 0 {
		return held, err
	}
	seq := uint64(0)
	if len(held) > 0 {
		seq = held[len(held)-1].Seq + 1
	}
	for _, e := range st.Held {
		if slices.ContainsFunc(held, func(h HeldEvent) bool { return h.Event.ID == e.ID }) {
			continue
		}
		h := HeldEvent{Seq: seq, Event: e}
		if err := t.Records.Hold(ctx, name, h); err != nil {
			return nil, err
		}
		held = append(held, h)
		seq++
	}
	st.Held, st.HeldCount = nil, len(held)
	return held, t.Records.PutState(ctx, name, *st)
}

// fail sets an event aside for good: marked processed with the reason (never retried),
// counted on the listener, logged, and unheld.
func (t *Ticker) fail(ctx context.Context, st *State, h HeldEvent, reason error, now time.Time) error {
	name := t.Listener.Name
	msg := reason.Error()
	if err := t.Records.MarkProcessed(ctx, name, h.Event.ID, Processed{At: now, Error: msg}); err != nil {
		return err
	}
	if err := t.Records.Unhold(ctx, name, h.Seq); err != nil {
		return err
	}
	st.Failed++
	st.LastFailed, st.FailedAt = h.Event.ID+": "+msg, now
	st.LastError, st.ErrorAt = fmt.Sprintf("event %s failed (not retried): %s", h.Event.ID, msg), now
	t.log().Warn("listener event failed; not retried", "name", name, "event", h.Event.ID, "err", msg)
	return nil
}

// storeErr marks failures of the records, which end a tick (the next one retries from
// what was stored), apart from an action's failure, which holds its event.
type storeErr struct{ error }

func (e storeErr) Unwrap() error { return e.error }

func isStoreErr(err error) bool {
	_, ok := err.(storeErr)
	return ok
}

// dispatch runs one event: intent, action, then the state (with the dispatch time), the
// processed mark, and the held record dropped. rest is how many stay held after it.
func (t *Ticker) dispatch(ctx context.Context, st *State, lim *Limiter, h HeldEvent, target string, now time.Time, rest int) error {
	name, e := t.Listener.Name, h.Event
	d := Dispatch{Event: e, Target: target, At: now, Plan: t.Listener.Action.IsPlan(), Workflow: t.Listener.Action.IsWorkflow()}
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
	st.HeldCount = rest
	st.Dispatches = lim.Times(now)
	if err := t.Records.PutState(ctx, name, *st); err != nil {
		return storeErr{err}
	}
	if err := t.Records.MarkProcessed(ctx, name, e.ID, Processed{At: now, Target: target}); err != nil {
		return storeErr{err}
	}
	if err := t.Records.Unhold(ctx, name, h.Seq); err != nil {
		return storeErr{err}
	}
	return nil
}

// settle finishes dispatches a crash interrupted: one that took effect is marked
// processed (its time counted once) and unheld; one that did not stays held (an event
// is unheld only after its processed mark), to be dispatched again. It returns the
// held events left.
func (t *Ticker) settle(ctx context.Context, st *State, lim *Limiter, held []HeldEvent) ([]HeldEvent, error) {
	name := t.Listener.Name
	pending, err := t.Records.PendingDispatches(ctx, name)
	if err != nil {
		return held, err
	}
	for _, d := range pending {
		done, err := t.Dispatcher.Done(ctx, d)
		if err != nil {
			return held, fmt.Errorf("settle dispatch %s: %w", d.Event.ID, err)
		}
		i := slices.IndexFunc(held, func(h HeldEvent) bool { return h.Event.ID == d.Event.ID })
		if done {
			if st.Counted != d.Event.ID {
				lim.Record(d.At)
				st.Fires++
				st.Counted = d.Event.ID
			}
			st.Dispatches = lim.Times(t.now())
			if err := t.Records.PutState(ctx, name, *st); err != nil {
				return held, err
			}
			if err := t.Records.MarkProcessed(ctx, name, d.Event.ID, Processed{At: d.At, Target: d.Target}); err != nil {
				return held, err
			}
			if i >= 0 {
				if err := t.Records.Unhold(ctx, name, held[i].Seq); err != nil {
					return held, err
				}
				held = slices.Delete(held, i, i+1)
			}
			continue
		}
		if i < 0 {
			// An intent without its held record (left by a version that kept held
			// events in the state): held again, last.
			h := HeldEvent{Event: d.Event}
			if len(held) > 0 {
				h.Seq = held[len(held)-1].Seq + 1
			}
			if err := t.Records.Hold(ctx, name, h); err != nil {
				return held, err
			}
			held = append(held, h)
		}
		if err := t.Records.s.Delete(ctx, BucketDispatches, eventKey(name, d.Event.ID)); err != nil {
			return held, err
		}
	}
	return held, nil
}

// prune forgets, at most every PruneEvery, processed ids the source no longer shows and
// that are past the age or count bound. Ids the source shows are kept whatever their
// age, so a stable listing never fires twice: for a shell source the listing is a clean
// run's whole output; a source that implements Shower says what it could still show; a
// source that is neither is not pruned here.
// A prune that fails is logged and tried again at the next tick; it never fails the
// tick (what it would have deleted only costs room).
func (t *Ticker) prune(ctx context.Context, res *TickResult, poll Poll, cursor Cursor, now time.Time) {
	every := t.PruneEvery
	if every <= 0 {
		every = time.Hour
	}
	if !t.prunedAt.IsZero() && now.Sub(t.prunedAt) < every {
		return
	}
	shown := make(map[string]bool, len(poll.Events))
	for _, e := range poll.Events {
		shown[e.ID] = true
	}
	switch sh, ok := t.Source.(Shower); {
	case poll.Full:
	case ok:
		more, err := sh.Shown(ctx, cursor)
		if err != nil {
			t.log().Warn("listener prune: listing what the source shows", "name", t.Listener.Name, "err", err)
			return
		}
		for id := range more {
			shown[id] = true
		}
	default:
		return
	}
	keep, maxN := t.KeepProcessed, t.MaxProcessed
	if keep <= 0 {
		keep = 30 * 24 * time.Hour
	}
	if maxN <= 0 {
		maxN = 10_000
	}
	n, err := t.Records.PruneShown(ctx, t.Listener.Name, shown, now.Add(-keep), maxN)
	res.Pruned = n
	if n > 0 {
		t.log().Info("pruned listener ids", "name", t.Listener.Name, "n", n, "shown", len(shown))
	}
	if err != nil {
		t.log().Warn("listener prune", "name", t.Listener.Name, "err", err)
		return
	}
	t.prunedAt = now
}

// target renders the action's path (or, for a plan, its title) for an event.
func (t *Ticker) target(e Event) (string, error) {
	a := t.Listener.Action
	if a.IsWorkflow() {
		return a.Workflow, nil
	}
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
