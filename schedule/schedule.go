// Package schedule runs durable schedules (DESIGN §7): commands the server runs on a
// cadence, each run recorded, never double-fired by a restart. It is a feature beside
// the kernel, not part of it: it keeps its own store buckets and lock, and reaches
// the kernel only through the core.Kernel Start hands it (events, the verified caller,
// its own buckets).
package schedule

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"

	"orcr/core"
	"orcr/core/wire"
	schedapi "orcr/schedule/api"
)

// Durable schedules (DESIGN §7). A schedule is stored in bucket "schedules" under its
// name; its runs in bucket "schedrun.<name>" under the start instant. The server fires
// them; the store is the truth:
//
//   - Before a run starts, one write advances NextAt past the instant being served and
//     records the run as the schedule's Claim. A crash after that write finds the claim
//     on restart and records the run as interrupted; it never runs it again. A crash
//     before it leaves the run due, and the missed-run policy decides.
//   - On start, a schedule whose NextAt passed while the server was down is "missed":
//     policy skip (default) moves NextAt to the next instant after now and says so in a
//     schedule.missed event; run-once fires it once now.

const (
	bucketSchedules = "schedules"
	schedRunPrefix  = "schedrun."
	scheduleVersion = 1
	keepRuns        = 100     // run history kept per schedule
	outputTailMax   = 4 << 10 // bytes of output kept per run
	minEvery        = time.Second
	// schedMaxSleep bounds the scheduler's sleep so wall-clock jumps are noticed.
	schedMaxSleep = time.Minute
)

var scheduleName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`) })

// cronParser accepts the standard five fields and descriptors (@daily, @every 1h).
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

var cronFields = []string{"minute", "hour", "day-of-month", "month", "day-of-week"}

// schedRecord is the stored form of a schedule.
type schedRecord struct {
	V        int               `json:"v"`
	Schedule schedapi.Schedule `json:"schedule"`
	// Claim is the run started and not yet recorded as ended.
	Claim *schedapi.ScheduleRun `json:"claim,omitempty"`
}

// Options configure a Service; Start hands it the kernel and its buckets.
type Options struct {
	Logger *slog.Logger
	Home   string // ORCR_HOME, set for the commands
	Socket string // the server socket, ORCR_SOCKET of the commands
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
}

// Service holds the loaded schedules and fires them and serves schedule.*
// (methods.go). Its mutex is never held across a run.
type Service struct {
	opts  Options
	store core.Buckets // set by Start
	k     core.Kernel  // set by Start
	log   *slog.Logger

	mu     sync.Mutex
	byName map[string]*schedRT
	wake   chan struct{}

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New builds the service; Start loads the schedules and starts firing them.
func New(opts Options) (*Service, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Service{opts: opts, log: opts.Logger,
		byName: map[string]*schedRT{}, wake: make(chan struct{}, 1)}, nil
}

func (s *Service) now() time.Time { return s.opts.Now().UTC() }

type schedRT struct {
	rec     schedRecord
	spec    cron.Schedule // nil for --every
	missed  bool          // due at load: fire once as a missed run (run-once policy)
	running bool
	cancel  context.CancelFunc
	done    chan struct{} // closed when the current run is recorded
	result  schedapi.ScheduleRun
}

func (s *Service) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// parseCron parses expr, naming the field that is wrong.
func parseCron(expr string) (cron.Schedule, error) {
	spec, err := cronParser.Parse(expr)
	if err == nil {
		return spec, nil
	}
	f := strings.Fields(expr)
	if strings.HasPrefix(expr, "@") || len(f) == 0 {
		return nil, wire.Errorf(wire.CodeInvalidParams, "invalid cron %q: %v", expr, err)
	}
	if strings.HasPrefix(f[0], "TZ=") || strings.HasPrefix(f[0], "CRON_TZ=") {
		if _, terr := cronParser.Parse(f[0] + " * * * * *"); terr != nil {
			return nil, wire.Errorf(wire.CodeInvalidParams, "invalid cron %q: time zone %s: %v", expr, f[0], terr)
		}
		f = f[1:]
	}
	if len(f) != 5 {
		return nil, wire.Errorf(wire.CodeInvalidParams,
			"invalid cron %q: want 5 fields (minute hour day-of-month month day-of-week), got %d", expr, len(f))
	}
	for i, v := range f {
		probe := []string{"*", "*", "*", "*", "*"}
		probe[i] = v
		if _, ferr := cronParser.Parse(strings.Join(probe, " ")); ferr != nil {
			return nil, wire.Errorf(wire.CodeInvalidParams, "invalid cron %q: %s field %q: %v", expr, cronFields[i], v, ferr)
		}
	}
	return nil, wire.Errorf(wire.CodeInvalidParams, "invalid cron %q: %v", expr, err)
}

// nextAfter is the first cadence instant strictly after t.
func (rt *schedRT) nextAfter(t time.Time) time.Time {
	s := rt.rec.Schedule
	if rt.spec != nil {
		return rt.spec.Next(t.Local()).UTC()
	}
	every := time.Duration(s.EverySeconds) * time.Second
	// Anchored at creation, so restarts do not drift the cadence.
	n := t.Sub(s.CreatedAt)/every + 1
	if n < 1 {
		n = 1
	}
	return s.CreatedAt.Add(n * every).UTC()
}

func (s *Service) putSchedule(ctx context.Context, rec schedRecord) error {
	rec.V = scheduleVersion
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode schedule: %w", err)
	}
	if err := s.store.Put(ctx, bucketSchedules, rec.Schedule.Name, b); err != nil {
		return fmt.Errorf("store schedule %s: %w", rec.Schedule.Name, err)
	}
	return nil
}

// load reads every schedule, settles claims a crash left behind and applies the
// missed-run policy. It runs before the loop starts.
func (s *Service) load(ctx context.Context) error {
	var recs []schedRecord
	var bad []string
	err := s.store.Scan(ctx, bucketSchedules, func(k string, v []byte) bool {
		var r schedRecord
		if err := json.Unmarshal(v, &r); err != nil || r.V != scheduleVersion {
			bad = append(bad, k)
			return true
		}
		recs = append(recs, r)
		return true
	})
	if err != nil {
		return fmt.Errorf("load schedules: %w", err)
	}
	for _, k := range bad {
		s.log.Error("schedule record unreadable; left in place", "name", k)
	}
	now := s.now()
	for _, r := range recs {
		rt := &schedRT{rec: r}
		if r.Schedule.Cron != "" {
			spec, err := parseCron(r.Schedule.Cron)
			if err != nil {
				s.log.Error("stored schedule has a bad cron; skipped", "name", r.Schedule.Name, "err", err)
				continue
			}
			rt.spec = spec
		}
		if s.disableIfNeverDue(rt, now) {
			continue
		}
		if c := rt.rec.Claim; c != nil {
			end := now
			c.EndedAt = &end
			c.Error = "the server stopped during this run (restarted at " + now.Format(time.RFC3339) + "); it is not run again"
			if err := s.finishRun(ctx, rt, *c); err != nil {
				return err
			}
		}
		if n := rt.rec.Schedule.NextAt; n == nil || n.Before(now) {
			switch {
			case n != nil && rt.rec.Schedule.MissedPolicy == "run-once":
				rt.missed = true // the loop fires it now
			default:
				next := rt.nextAfter(now)
				if n != nil {
					s.k.Publish(ctx, wire.Event{Event: schedapi.EventScheduleMissed, Rule: "schedule.missed=skip",
						Data: map[string]any{"name": r.Schedule.Name, "dueAt": n.Format(time.RFC3339), "nextAt": next.Format(time.RFC3339)}})
				}
				rt.rec.Schedule.NextAt = &next
				if err := s.putSchedule(ctx, rt.rec); err != nil {
					return err
				}
			}
		}
		s.byName[r.Schedule.Name] = rt
	}
	return nil
}

// loop fires due schedules until Close.
func (s *Service) loop() {
	defer s.wg.Done()
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-timer.C:
		case <-s.wake:
		}
		next := s.fireDue(s.ctx)
		d := schedMaxSleep
		if !next.IsZero() {
			d = min(max(next.Sub(s.now()), 5*time.Millisecond), schedMaxSleep)
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(d)
	}
}

// fireDue starts every due schedule and returns the earliest next instant.
func (s *Service) fireDue(ctx context.Context) time.Time {
	now := s.now()
	var earliest time.Time
	s.mu.Lock()
	names := make([]string, 0, len(s.byName))
	for n := range s.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		rt := s.byName[n]
		na := rt.rec.Schedule.NextAt
		if na != nil && !na.IsZero() && !na.After(now) {
			due := *na
			trigger := "schedule"
			if rt.missed {
				trigger = "missed"
			}
			if rt.running {
				next := rt.nextAfter(now)
				rt.rec.Schedule.NextAt = &next
				if err := s.putSchedule(ctx, rt.rec); err != nil {
					s.log.Error("advance schedule", "name", n, "err", err)
				}
				s.k.Publish(ctx, wire.Event{Event: schedapi.EventScheduleMissed, Rule: "schedule.overlap",
					Data: map[string]any{"name": n, "dueAt": due.Format(time.RFC3339), "reason": "the previous run is still going"}})
			} else if _, err := s.startRunLocked(ctx, rt, trigger, &due, true); err != nil {
				s.log.Error("start schedule run", "name", n, "err", err)
			}
			rt.missed = false
			na = rt.rec.Schedule.NextAt
		}
		if na != nil && (earliest.IsZero() || na.Before(earliest)) {
			earliest = *na
		}
	}
	s.mu.Unlock()
	return earliest
}

// startRunLocked claims a run (stored before anything starts) and starts it. The
// caller holds the scheduler's mutex.
func (s *Service) startRunLocked(ctx context.Context, rt *schedRT, trigger string, due *time.Time, advance bool) (chan struct{}, error) {
	now := s.now()
	run := schedapi.ScheduleRun{StartedAt: now, Trigger: trigger, DueAt: due}
	rec := rt.rec
	if advance {
		next := rt.nextAfter(now)
		rec.Schedule.NextAt = &next
	}
	rec.Claim = &run
	rec.Schedule.LastRun = &run
	if err := s.putSchedule(ctx, rec); err != nil {
		return nil, err
	}
	rt.rec = rec
	rctx, cancel := context.WithCancel(s.ctx)
	rt.running, rt.cancel, rt.done = true, cancel, make(chan struct{})
	name := rec.Schedule.Name
	s.k.Publish(ctx, wire.Event{Event: schedapi.EventScheduleFired, Rule: "schedule." + trigger,
		Data: map[string]any{"name": name, "trigger": trigger}})
	sched := rec.Schedule
	done := rt.done
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer cancel()
		res := s.exec(rctx, sched, run)
		s.mu.Lock()
		if s.byName[name] == rt && s.ctx.Err() == nil {
			if err := s.finishRun(context.Background(), rt, res); err != nil {
				s.log.Error("record schedule run", "name", name, "err", err)
			}
		}
		rt.running, rt.result = false, res
		close(done)
		s.mu.Unlock()
		data := map[string]any{"name": name, "error": res.Error}
		if res.ExitCode != nil {
			data["exitCode"] = *res.ExitCode
		}
		if s.ctx.Err() == nil {
			s.k.Publish(context.Background(), wire.Event{Event: schedapi.EventScheduleFinished, Rule: "schedule." + trigger, Data: data})
		}
		s.kick()
	}()
	return done, nil
}

// finishRun stores a finished run in the history and clears the claim.
func (s *Service) finishRun(ctx context.Context, rt *schedRT, run schedapi.ScheduleRun) error {
	name := rt.rec.Schedule.Name
	b, err := json.Marshal(run)
	if err != nil {
		return fmt.Errorf("encode run: %w", err)
	}
	bucket := schedRunPrefix + name
	if err := s.store.Put(ctx, bucket, fmt.Sprintf("%020d", run.StartedAt.UnixNano()), b); err != nil {
		return fmt.Errorf("store run of %s: %w", name, err)
	}
	rec := rt.rec
	rec.Claim = nil
	rec.Schedule.LastRun = &run
	if err := s.putSchedule(ctx, rec); err != nil {
		return err
	}
	rt.rec = rec
	var keys []string
	_ = s.store.Scan(ctx, bucket, func(k string, _ []byte) bool { keys = append(keys, k); return true })
	for len(keys) > keepRuns {
		_ = s.store.Delete(ctx, bucket, keys[0])
		keys = keys[1:]
	}
	return nil
}

// Schedules lists the durable schedules, by name.
func (s *Service) Schedules(ctx context.Context) ([]schedapi.Schedule, error) {
	s.mu.Lock()
	out := make([]schedapi.Schedule, 0, len(s.byName))
	for _, rt := range s.byName {
		out = append(out, rt.rec.Schedule)
	}
	s.mu.Unlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// ScheduleAdd validates and stores a new schedule.
func (s *Service) ScheduleAdd(ctx context.Context, p schedapi.ScheduleAddParams) (schedapi.Schedule, error) {
	if !scheduleName().MatchString(p.Name) {
		return schedapi.Schedule{}, wire.Errorf(wire.CodeInvalidParams,
			"schedule name %q: use 1-64 of a-z 0-9 . _ - starting with a letter or digit", p.Name)
	}
	if len(p.Command) == 0 || p.Command[0] == "" {
		return schedapi.Schedule{}, wire.Errorf(wire.CodeInvalidParams, "schedule %s needs a command: orcr schedule add %s --every 10m -- CMD [ARGS…]", p.Name, p.Name)
	}
	if err := checkScheduleAdd(p, s.now()); err != nil {
		return schedapi.Schedule{}, err
	}
	rt := &schedRT{}
	switch {
	case p.EverySeconds != 0 && p.Cron != "":
		return schedapi.Schedule{}, wire.Errorf(wire.CodeInvalidParams, "give --every or --cron, not both")
	case p.Cron != "":
		spec, err := parseCron(p.Cron)
		if err != nil {
			return schedapi.Schedule{}, err
		}
		rt.spec = spec
	case p.EverySeconds < 0:
		return schedapi.Schedule{}, wire.Errorf(wire.CodeInvalidParams, "--every must be positive, got %ds", p.EverySeconds)
	case p.EverySeconds == 0:
		return schedapi.Schedule{}, wire.Errorf(wire.CodeInvalidParams, "give a cadence: --every D (e.g. 10m) or --cron EXPR")
	case time.Duration(p.EverySeconds)*time.Second < minEvery:
		return schedapi.Schedule{}, wire.Errorf(wire.CodeInvalidParams, "--every must be at least %s", minEvery)
	}
	policy := p.MissedPolicy
	switch policy {
	case "":
		policy = "skip"
	case "skip", "run-once":
	default:
		return schedapi.Schedule{}, wire.Errorf(wire.CodeInvalidParams, "missed-run policy %q: use skip or run-once", policy)
	}
	cwd := p.Cwd
	if cwd == "" {
		return schedapi.Schedule{}, wire.Errorf(wire.CodeInvalidParams, "schedule %s needs a working directory (cwd)", p.Name)
	}
	if !strings.HasPrefix(cwd, "/") {
		return schedapi.Schedule{}, wire.Errorf(wire.CodeInvalidParams, "cwd %q must be an absolute path", cwd)
	}
	owner := "user"
	if parent, err := s.k.CallerAgent(ctx); err != nil {
		return schedapi.Schedule{}, err
	} else if parent != nil {
		owner = parent.Path
	}
	now := s.now()
	rt.rec = schedRecord{Schedule: schedapi.Schedule{Name: p.Name, EverySeconds: p.EverySeconds, Cron: p.Cron,
		Command: p.Command, Cwd: cwd, Env: scheduleEnv(p.Env), MissedPolicy: policy, Owner: owner, CreatedAt: now}}
	next := rt.nextAfter(now)
	rt.rec.Schedule.NextAt = &next
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.byName[p.Name]; ok {
		return schedapi.Schedule{}, &wire.Error{Code: wire.CodeNameTaken,
			Message: fmt.Sprintf("a schedule named %q exists already; remove it first (orcr schedule rm %s) or pick another name", p.Name, p.Name)}
	}
	if err := s.putSchedule(ctx, rt.rec); err != nil {
		return schedapi.Schedule{}, err
	}
	s.byName[p.Name] = rt
	s.kick()
	s.log.Info("schedule added", "name", p.Name, "owner", owner, "next", next)
	return rt.rec.Schedule, nil
}

// scheduleEnv is the captured environment minus the caller's agent identity, so an
// `orcr agent run` inside a schedule makes a root agent; the server's socket and home
// are set when the command runs.
func scheduleEnv(env map[string]string) map[string]string {
	out := make(map[string]string, len(env))
	for k, v := range env {
		switch k {
		case "ORCR_ID", "ORCR_PATH", "ORCR_PARENT_ID", "ORCR_PARENT_PATH", "ORCR_PROVIDER", "ORCR_SOCKET", "ORCR_HOME":
			continue
		}
		out[k] = v
	}
	return out
}

func (s *Service) byNameLocked(name string) (*schedRT, error) {
	rt, ok := s.byName[name]
	if !ok {
		return nil, wire.Errorf(wire.CodeNotFound, "no schedule named %q; see orcr schedule ls", name)
	}
	return rt, nil
}

// ScheduleRemove deletes a schedule and its history, stopping a run in progress.
func (s *Service) ScheduleRemove(ctx context.Context, name string) error {
	s.mu.Lock()
	rt, err := s.byNameLocked(name)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	if err := s.store.Delete(ctx, bucketSchedules, name); err != nil && !errors.Is(err, wire.ErrNotFound) {
		s.mu.Unlock()
		return fmt.Errorf("delete schedule %s: %w", name, err)
	}
	delete(s.byName, name)
	if rt.cancel != nil {
		rt.cancel()
	}
	s.mu.Unlock()
	var keys []string
	bucket := schedRunPrefix + name
	_ = s.store.Scan(ctx, bucket, func(k string, _ []byte) bool { keys = append(keys, k); return true })
	for _, k := range keys {
		_ = s.store.Delete(ctx, bucket, k)
	}
	s.log.Info("schedule removed", "name", name)
	return nil
}

// ScheduleRun runs a schedule now, outside its cadence. With Wait it returns the
// finished run.
func (s *Service) ScheduleRun(ctx context.Context, p schedapi.ScheduleRunParams) (schedapi.ScheduleRun, error) {
	s.mu.Lock()
	rt, err := s.byNameLocked(p.Name)
	if err != nil {
		s.mu.Unlock()
		return schedapi.ScheduleRun{}, err
	}
	if rt.running {
		s.mu.Unlock()
		return schedapi.ScheduleRun{}, wire.Errorf(wire.CodeInvalidParams, "schedule %s is running already (since %s)", p.Name, rt.rec.Schedule.LastRun.StartedAt.Format(time.RFC3339))
	}
	done, err := s.startRunLocked(ctx, rt, "manual", nil, false)
	if err != nil {
		s.mu.Unlock()
		return schedapi.ScheduleRun{}, err
	}
	started := *rt.rec.Claim
	s.mu.Unlock()
	if !p.Wait {
		return started, nil
	}
	select {
	case <-done:
	case <-ctx.Done():
		return started, ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return rt.result, nil
}

// ScheduleRuns returns a schedule's stored run history, oldest first.
func (s *Service) ScheduleRuns(ctx context.Context, name string) ([]schedapi.ScheduleRun, error) {
	s.mu.Lock()
	_, err := s.byNameLocked(name)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	out := []schedapi.ScheduleRun{}
	err = s.store.Scan(ctx, schedRunPrefix+name, func(_ string, v []byte) bool {
		var r schedapi.ScheduleRun
		if json.Unmarshal(v, &r) == nil {
			out = append(out, r)
		}
		return true
	})
	return out, err
}
