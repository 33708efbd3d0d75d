package listen

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"orcr/core"
	"orcr/core/wire"
	"orcr/github"
	listenapi "orcr/listen/api"

	"golang.org/x/sys/unix"
)

// The listener service (DESIGN §11): listener files under Dir, hot-reloaded, and
// documents written through the API, each ticked on its interval by one loop
// goroutine the service owns. A tick runs on a goroutine of its own (at most one per
// listener, at most MaxTicks at once), so a shell command waiting for its timeout
// holds up only its own listener.

// More buckets, beside the Records ones.
const (
	BucketDocs     = "listen.docs"     // <listener> → apiDoc (documents written through the API)
	BucketDisabled = "listen.disabled" // <listener> → "1"
)

// ServiceOptions configure a Service; Start hands it the kernel (events, agents, the
// plans feature through the registry) and its buckets.
type ServiceOptions struct {
	Dir string // listener files; default DefaultDir()
	// GitHub returns the shared GitHub client (built on first use: resolving a token
	// may run gh). Its error fails the polls of github sources, recorded on each.
	GitHub   func(ctx context.Context) (*github.Client, error)
	Logger   *slog.Logger
	Now      func() time.Time
	Rescan   time.Duration // how often Dir is rescanned (default 5 s)
	MaxTicks int           // ticks running at once (default 4)
	// KeepProcessed and MaxProcessed bound each listener's processed ids (defaults
	// 30 days and 10,000), pruned hourly.
	KeepProcessed time.Duration
	MaxProcessed  int
}

// apiDoc is a document written through the API, as stored.
type apiDoc struct {
	Document  string    `json:"document"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// entry is one listener the service knows, runnable or not.
type entry struct {
	name    string
	origin  string // "file" | "api"
	file    string
	doc     string
	l       Listener
	err     error // why it cannot run (*ParseError)
	ticker  *Ticker
	next    time.Time // when its next tick is due
	ticking bool
	failing bool // the last tick failed (written by the tick goroutine under s.mu: entryCopy copies the entry)
}

// Service runs listeners; it serves its socket method (methods.go).
type Service struct {
	opts    ServiceOptions
	k       core.Kernel // set by Start
	st      Store       // the feature's buckets, set by Start
	rec     *Records    // over st, set by Start
	log     *slog.Logger
	dispatc *dispatcher

	mu       sync.Mutex
	ls       map[string]*entry
	files    map[string]Loaded
	disabled map[string]bool
	wake     chan struct{}
	sem      chan struct{}
	// changed is signalled by watch (the folder changed); both are the loop's.
	changed     chan struct{}
	watch       *dirWatch
	watched     string // the folder watch watches: Dir, or its nearest parent while Dir is missing
	watchWarned bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// NewService builds the service; Start loads the listeners and starts the loop.
func NewService(o ServiceOptions) (*Service, error) {
	if o.Dir == "" {
		o.Dir = DefaultDir()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Rescan <= 0 {
		o.Rescan = 5 * time.Second
	}
	if o.MaxTicks <= 0 {
		o.MaxTicks = 4
	}
	if o.KeepProcessed <= 0 {
		o.KeepProcessed = 30 * 24 * time.Hour
	}
	if o.MaxProcessed <= 0 {
		o.MaxProcessed = 10_000
	}
	if o.GitHub == nil {
		o.GitHub = func(context.Context) (*github.Client, error) {
			return nil, errors.New("no GitHub client configured")
		}
	}
	s := &Service{opts: o, log: o.Logger, ls: map[string]*entry{},
		files: map[string]Loaded{}, disabled: map[string]bool{}, wake: make(chan struct{}, 1), changed: make(chan struct{}, 1),
		sem: make(chan struct{}, o.MaxTicks)}
	s.dispatc = &dispatcher{s: s}
	return s, nil
}

// start loads the stored documents and the files, and starts the loop.
func (s *Service) start(ctx context.Context) error {
	s.ctx, s.cancel = context.WithCancel(context.Background())
	if err := s.st.Scan(ctx, BucketDisabled, func(k string, _ []byte) bool {
		s.disabled[k] = true
		return true
	}); err != nil {
		return fmt.Errorf("load listeners: %w", err)
	}
	var docs []struct {
		name string
		doc  apiDoc
	}
	if err := s.st.Scan(ctx, BucketDocs, func(k string, v []byte) bool {
		var d apiDoc
		if json.Unmarshal(v, &d) == nil {
			docs = append(docs, struct {
				name string
				doc  apiDoc
			}{k, d})
		}
		return true
	}); err != nil {
		return fmt.Errorf("load listeners: %w", err)
	}
	s.mu.Lock()
	for _, d := range docs {
		l, err := Parse(d.name, []byte(d.doc.Document))
		s.setLocked(ctx, d.name, "api", "", d.doc.Document, l, err)
	}
	s.mu.Unlock()
	// Watched before the first scan: a file written between them is seen by either.
	s.watchDir()
	s.rescan(ctx)
	s.wg.Add(1)
	go s.loop()
	return nil
}

// watchDir watches the listener folder when it is not watched yet (or its watch ended:
// the folder was removed or moved); start's, then the loop's. A folder that does not
// exist yet has its nearest existing parent watched instead (a user making
// ~/.config/orcr/listeners for a first listener: `mkdir -p`), so its making is
// rescanned at once too, and the folder is watched from that rescan on.
func (s *Service) watchDir() {
	target := s.opts.Dir
	for {
		if _, err := os.Stat(target); err == nil || filepath.Dir(target) == target {
			break
		}
		target = filepath.Dir(target)
	}
	if s.watch != nil && s.watch.alive() && s.watched == target {
		return
	}
	if s.watch != nil {
		s.watch.close()
		s.watch, s.watched = nil, ""
	}
	w, err := watchDir(target, s.changed)
	if err != nil {
		if !errors.Is(err, unix.ENOENT) && !s.watchWarned {
			s.watchWarned = true
			s.log.Warn("listener dir: not watched, rescanned every "+s.opts.Rescan.String(), "dir", target, "err", err)
		}
		return
	}
	s.watch, s.watched = w, target
}

func (s *Service) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Service) publish(name, kind, rule string, data map[string]any) {
	data["name"] = name
	if _, err := s.k.Publish(context.Background(), wire.Event{Event: kind, Rule: rule, Data: data}); err != nil {
		s.log.Warn("listener event", "name", name, "event", kind, "err", err)
	}
}

// loop rescans the directory, prunes, and starts due ticks until Close.
func (s *Service) loop() {
	defer s.wg.Done()
	timer := time.NewTimer(0)
	defer timer.Stop()
	defer func() {
		if s.watch != nil {
			s.watch.close()
		}
	}()
	now := s.opts.Now()
	nextScan := now.Add(s.opts.Rescan)
	nextPrune := now
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-timer.C:
		case <-s.wake:
		case <-s.changed:
			// An edit applies now, not at the next timed rescan (watch.go).
			if at := s.opts.Now().Add(watchSettle); at.Before(nextScan) {
				nextScan = at
			}
		}
		now = s.opts.Now()
		if !now.Before(nextScan) {
			s.watchDir() // first: a change after the scan's read is seen
			s.rescan(s.ctx)
			nextScan = now.Add(s.opts.Rescan)
		}
		if !now.Before(nextPrune) {
			nextPrune = now.Add(time.Hour)
			// Listeners that run prune their own ids against their source's listing
			// (Ticker.prune); this pass bounds only those of listeners that are gone.
			if n, err := s.rec.Prune(s.ctx, now.Add(-s.opts.KeepProcessed), s.opts.MaxProcessed, s.known); err != nil {
				s.log.Warn("prune listener ids", "err", err)
			} else if n > 0 {
				s.log.Info("pruned ids of removed listeners", "n", n)
			}
		}
		wait := nextScan.Sub(now)
		if at := s.startDue(now); !at.IsZero() {
			wait = min(wait, at.Sub(now))
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(max(wait, 5*time.Millisecond))
	}
}

// known says a listener of that name is loaded (runnable, invalid or disabled): its
// processed ids are not the removed-listener prune's.
func (s *Service) known(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.ls[name]
	return ok
}

// startDue starts the tick of every due, enabled, runnable listener (as far as the
// semaphore allows) and returns the earliest time one is due next.
func (s *Service) startDue(now time.Time) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.ls))
	for n := range s.ls {
		names = append(names, n)
	}
	sort.Strings(names)
	var earliest time.Time
	for _, n := range names {
		e := s.ls[n]
		if e.ticker == nil || e.ticking || s.disabled[n] {
			continue
		}
		if e.next.After(now) {
			if earliest.IsZero() || e.next.Before(earliest) {
				earliest = e.next
			}
			continue
		}
		select {
		case s.sem <- struct{}{}:
		default:
			continue // a finishing tick kicks the loop
		}
		e.ticking = true
		s.wg.Add(1)
		go s.runTick(e, e.ticker)
	}
	return earliest
}

// runTick runs one tick and records its outcome; a panic in a source is the
// listener's error, never the server's.
func (s *Service) runTick(e *entry, tk *Ticker) {
	defer s.wg.Done()
	defer func() { <-s.sem; s.kick() }()
	var res TickResult
	var err error
	func() {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("listener %s: tick panicked: %v", tk.Listener.Name, r)
				s.log.Error("listener tick panicked", "name", tk.Listener.Name, "panic", r)
			}
		}()
		res, err = tk.Tick(s.ctx)
	}()
	now := s.opts.Now()
	name := tk.Listener.Name
	s.mu.Lock()
	e.ticking = false
	switch {
	case err != nil:
		e.next = now.Add(tk.Listener.Interval) // the store failed: try again later
	case !res.NextPoll.IsZero():
		e.next = res.NextPoll
	default:
		e.next = now.Add(tk.Listener.Interval)
	}
	_, present := s.ls[name]
	wasFailing := e.failing
	if err == nil {
		e.failing = res.Err != nil
	}
	s.mu.Unlock()
	if !present || s.ctx.Err() != nil {
		return
	}
	rule := "listener." + tk.Listener.Source.Type
	if err != nil {
		s.log.Error("listener tick", "name", name, "err", err)
		s.publish(name, listenapi.EventListenerFailed, rule, map[string]any{"error": err.Error()})
		return
	}
	next := res.NextPoll.UTC().Format(time.RFC3339)
	switch {
	case res.Skipped == "at a rate ceiling":
		s.publish(name, listenapi.EventListenerCeiling, rule, map[string]any{"held": res.Held, "nextPoll": next})
	case res.Err != nil:
		st, _ := s.rec.State(s.ctx, name)
		s.log.Warn("listener failed", "name", name, "err", res.Err, "failures", st.Failures)
		s.publish(name, listenapi.EventListenerFailed, rule, map[string]any{"error": res.Err.Error(),
			"failures": st.Failures, "nextPoll": next, "held": res.Held, "dispatched": res.Dispatched})
	case res.Polled && (res.New > 0 || res.Dispatched > 0 || res.Held > 0 || res.Failed > 0 || wasFailing):
		s.publish(name, listenapi.EventListenerPolled, rule, map[string]any{"seen": res.Seen, "new": res.New,
			"dispatched": res.Dispatched, "failed": res.Failed, "held": res.Held, "nextPoll": next})
	}
}

// rescan rereads changed files and drops removed ones.
func (s *Service) rescan(ctx context.Context) {
	s.mu.Lock()
	prev := s.files
	s.mu.Unlock()
	loaded, err := LoadDir(s.opts.Dir, prev)
	if err != nil {
		s.log.Warn("listener dir", "dir", s.opts.Dir, "err", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files = loaded
	for name, ld := range loaded {
		if p, ok := prev[name]; ok && p.ModTime.Equal(ld.ModTime) && p.Size == ld.Size {
			continue
		}
		if e := s.ls[name]; e != nil && e.origin == "api" {
			s.log.Warn("listener file ignored: the name belongs to a listener written through the API",
				"name", name, "file", filepath.Join(s.opts.Dir, name+".toml"))
			continue
		}
		s.setLocked(ctx, name, "file", filepath.Join(s.opts.Dir, name+".toml"), ld.Doc, ld.Listener, ld.Err)
	}
	for name, e := range s.ls {
		if _, ok := loaded[name]; !ok && e.origin == "file" {
			s.removeLocked(ctx, name, e)
		}
	}
}

// setLocked installs (or replaces) a listener's definition. A changed source type
// starts the listener afresh (its cursor means nothing to the new source).
func (s *Service) setLocked(ctx context.Context, name, origin, file, doc string, l Listener, err error) {
	old := s.ls[name]
	e := old
	if e == nil {
		e = &entry{name: name}
		s.ls[name] = e
	}
	e.origin, e.file, e.doc, e.l, e.err = origin, file, doc, l, err
	if err != nil {
		e.ticker = nil
		s.log.Warn("listener invalid", "name", name, "err", err)
		s.publish(name, listenapi.EventListenerInvalid, "listener.load", map[string]any{"origin": origin, "error": err.Error()})
		s.kick()
		return
	}
	backoff := GitHubBackoff
	// A file's shell command runs in the listeners directory, so "./new-work.sh" beside
	// the file works; a document's in the server's working directory.
	dir := ""
	if origin == "file" {
		dir = s.opts.Dir
	}
	var src Poller = ShellSource{Command: l.Source.Command, Timeout: l.Source.Timeout, Dir: dir}
	if l.Source.Type != "shell" {
		src = lazyGitHub{get: s.opts.GitHub, src: l.Source, now: s.opts.Now}
	} else {
		backoff = nil
	}
	tk := &Ticker{Listener: l, Records: s.rec, Source: src, Dispatcher: s.dispatc, Now: s.opts.Now, Backoff: backoff,
		Logger: s.log, KeepProcessed: s.opts.KeepProcessed, MaxProcessed: s.opts.MaxProcessed}
	if old != nil && old.ticker != nil && old.ticker.Listener.Source.Type != l.Source.Type {
		if st, err := s.rec.State(ctx, name); err == nil {
			st.Cursor, st.Held, st.HeldCount, st.NextPoll = nil, nil, 0, time.Time{}
			_ = s.rec.PutState(ctx, name, st)
		}
		if err := s.rec.DropHeld(ctx, name); err != nil {
			s.log.Warn("listener held events", "name", name, "err", err)
		}
	}
	if old != nil && old.ticker != nil {
		// A new interval takes effect now rather than after the old one's wait, and a
		// failing listener that was edited (most likely fixed) tries again at once.
		now := s.opts.Now()
		if st, err := s.rec.State(ctx, name); err == nil {
			switch {
			case st.Failures > 0 && st.NextPoll.After(now):
				st.NextPoll = now
				_ = s.rec.PutState(ctx, name, st)
			case st.NextPoll.After(now.Add(l.Interval)):
				st.NextPoll = now.Add(l.Interval)
				_ = s.rec.PutState(ctx, name, st)
			}
		}
	}
	e.ticker, e.next = tk, time.Time{}
	s.log.Info("listener loaded", "name", name, "origin", origin, "source", l.Source.Type)
	s.publish(name, listenapi.EventListenerLoaded, "listener.load", map[string]any{"origin": origin, "source": l.Source.Type})
	s.kick()
}

// removeLocked forgets a listener: its state (cursor, held events) goes; its processed
// ids stay until pruning, so a file removed and put back does not fire again for what
// it already did.
func (s *Service) removeLocked(ctx context.Context, name string, e *entry) {
	delete(s.ls, name)
	if err := s.st.Delete(ctx, BucketState, name); err != nil && !errors.Is(err, wire.ErrNotFound) {
		s.log.Warn("remove listener state", "name", name, "err", err)
	}
	if err := s.rec.DropHeld(ctx, name); err != nil {
		s.log.Warn("remove listener held events", "name", name, "err", err)
	}
	s.log.Info("listener removed", "name", name, "origin", e.origin)
	s.publish(name, listenapi.EventListenerRemoved, "listener.load", map[string]any{"origin": e.origin})
}

// lazyGitHub is a github source whose client is made at its first poll.
type lazyGitHub struct {
	get func(ctx context.Context) (*github.Client, error)
	src Source
	now func() time.Time
}

func (g lazyGitHub) Poll(ctx context.Context, c Cursor) (Poll, error) {
	cl, err := g.get(ctx)
	if err != nil {
		return Poll{}, fmt.Errorf("github: %w", err)
	}
	return GitHubSource{Client: cl, Source: g.src, Now: g.now}.Poll(ctx, c)
}

func (g lazyGitHub) Shown(ctx context.Context, c Cursor) (map[string]bool, error) {
	cl, err := g.get(ctx)
	if err != nil {
		return nil, fmt.Errorf("github: %w", err)
	}
	return GitHubSource{Client: cl, Source: g.src, Now: g.now}.Shown(ctx, c)
}
