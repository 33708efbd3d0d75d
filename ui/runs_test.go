package ui

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/golden"

	"orcr/core/socket"
	"orcr/core/wire"
	runapi "orcr/orchestrate/run/api"
	"orcr/themes"
)

// fixtureRuns is a run under way with a milestone in most states (merged, asking,
// building one tier up, failed, planned, ready), a pool with a benched coder and two
// messages waiting for the lead; and a finished run with its summary.
func fixtureRuns() []runapi.RunView {
	bench := t0.Add(40 * time.Minute)
	csv := runapi.RunView{Name: "csv-import", State: "running", Repo: "/src/app", Base: "main", Feature: "feature/csv-import",
		Tip: "3f2a9c1d0b7e55aa", Check: "go test ./...", Mode: "worktree", Reviewer: "claude:claude-sonnet-4-5", Coders: 3,
		Created: t0.Add(-50 * time.Minute), Seq: 42,
		Milestones: []runapi.RunMilestone{
			{ID: "M1", Title: "Shared types for the importer", State: "merged", Tier: "high", TierNow: "high", Coder: "", Model: "claude:claude-opus-4-1",
				Rounds: runapi.Rounds{Check: 1}, ElapsedSeconds: 1500, EstimateSeconds: 1200, Commit: "9d8c7b6a5f"},
			{ID: "M2", Title: "CSV parser", State: "asking", Tier: "medium", TierNow: "medium", Coder: "coder-1", Model: "claude:claude-sonnet-4-5",
				Question: "reject the file or skip bad rows?", Waits: "an answer (`orcr run answer csv-import M2 …`)", ElapsedSeconds: 600, EstimateSeconds: 1800},
			{ID: "M3", Title: "Row sink writing to the contacts table", State: "building", Tier: "small", TierNow: "medium", Coder: "coder-2", Model: "codex:gpt-5-codex",
				Rounds: runapi.Rounds{Check: 2, Review: 1}, Waits: "coder-2", ElapsedSeconds: 2400, EstimateSeconds: 900},
			{ID: "M4", Title: "Import command", State: "failed", Tier: "high", TierNow: "high", Model: "claude:claude-opus-4-1",
				Rounds: runapi.Rounds{Check: 3, Conflict: 2}, Reason: "out of rounds: check failed 3 times", Waits: "you or the lead: out of rounds: check failed 3 times",
				ElapsedSeconds: 700, EstimateSeconds: 600},
			{ID: "M5", Title: "Docs", State: "planned", Tier: "small", TierNow: "small", Waits: "M4 to merge", EstimateSeconds: 300},
			{ID: "M6", Title: "Benchmarks", State: "ready", Tier: "small", TierNow: "small", Waits: "the lead's dispatch (or 15m0s after ready)"},
		},
		Pool: []runapi.RunCoder{
			{Name: "coder-1", Tier: "medium", Model: "claude:claude-sonnet-4-5", Milestone: "M2"},
			{Name: "coder-2", Tier: "medium", Model: "codex:gpt-5-codex", Milestone: "M3"},
			{Name: "coder-3", Tier: "high", Model: "claude:claude-opus-4-1", BenchedUntil: &bench},
		},
		Inbox: []string{"M2 asks: reject the file or skip bad rows?", "M4 failed: out of rounds: check failed 3 times; `orcr run retry csv-import M4 --tier high` or `orcr run hold csv-import M4`"},
	}
	done := runapi.RunView{Name: "auth", State: "done", Repo: "/src/app", Base: "main", Feature: "feature/auth", Tip: "aa11bb22cc33",
		Check: "make test", Mode: "shared", Coders: 1, Created: t0.Add(-26 * time.Hour), Updated: t0.Add(-25 * time.Hour), Seq: 90, Summary: "/src/app/.orcr/runs/auth/summary.md",
		Inbox: []string{}, Pool: []runapi.RunCoder{},
		Milestones: []runapi.RunMilestone{
			{ID: "M1", Title: "Session cookie", State: "merged", Tier: "medium", TierNow: "medium", Model: "claude:claude-sonnet-4-5", ElapsedSeconds: 900, EstimateSeconds: 1200},
		}}
	return []runapi.RunView{csv, done}
}

func fixtureRunLog() []runapi.RunEntry {
	return []runapi.RunEntry{
		{Seq: 39, At: t0.Add(-6 * time.Minute), Type: "fact", Kind: "checked", M: "M3", Text: "check failed (round 2)"},
		{Seq: 40, At: t0.Add(-4 * time.Minute), Type: "did", Kind: "send", M: "M3", Text: "the check output went to coder-2"},
		{Seq: 41, At: t0.Add(-2 * time.Minute), Type: "fact", Kind: "asked", M: "M2", Text: "reject the file or skip bad rows?"},
		{Seq: 42, At: t0.Add(-30 * time.Second), Type: "fact", Kind: "failed", M: "M4", Text: "out of rounds"},
	}
}

const fixtureSummary = `# Run auth

feature/auth from main, 1 milestones; check ` + "`make test`" + `.

| milestone | state | tier planned | model used | estimate | actual | rounds (check/review/conflict) | building | fixing | review | asking | benched |
|---|---|---|---|---|---|---|---|---|---|---|---|
| M1 Session cookie | merged | medium | claude:claude-sonnet-4-5 | 20m0s | 15m0s | 0/0/0 | 12m | - | 3m | - | - |
`

// runAgents are the run's agents as the tree has them.
func runAgents() []wire.Agent {
	return []wire.Agent{
		agent("r001", "runs/csv-import/lead", wire.StateIdle, "claude", "claude-opus-4-1", 50*time.Minute, 90_000, cost(1.2)),
		agent("r002", "runs/csv-import/coder-1", wire.StateIdle, "claude", "claude-sonnet-4-5", 12*time.Minute, 40_000, cost(0.4)),
		agent("r003", "runs/csv-import/coder-2", wire.StateWorking, "codex", "gpt-5-codex", 40*time.Minute, 70_000, cost(0.9)),
	}
}

// openRunsView opens the runs view on the fixture (the list, csv-import selected).
func openRunsView(t testing.TB, w, h int, opts Options) *Model {
	t.Helper()
	m := newTestModel(t, w, h, opts)
	m.Update(listMsg{agents: runAgents()})
	press(m, "O")
	if m.runsView() == nil {
		t.Fatal("O opened no runs view")
	}
	m.Update(runsMsg{runs: fixtureRuns(), at: t0})
	return m
}

// openRun opens csv-import with its log.
func openRun(t testing.TB, w, h int, opts Options) *Model {
	t.Helper()
	m := openRunsView(t, w, h, opts)
	press(m, "enter")
	m.Update(runLogMsg{name: "csv-import", entries: fixtureRunLog()})
	return m
}

func TestGoldenRuns(t *testing.T) {
	for _, theme := range themes.BuiltinNames {
		for _, sz := range [][2]int{{80, 24}, {160, 48}} {
			name := fmt.Sprintf("%s_%dx%d", theme, sz[0], sz[1])
			t.Run("list_"+name, func(t *testing.T) {
				m := openRunsView(t, sz[0], sz[1], Options{Theme: theme})
				golden.RequireEqual(t, screen(t, m))
			})
			t.Run("run_"+name, func(t *testing.T) {
				m := openRun(t, sz[0], sz[1], Options{Theme: theme})
				press(m, "down") // M2, asking
				golden.RequireEqual(t, screen(t, m))
			})
			t.Run("summary_"+name, func(t *testing.T) {
				m := openRunsView(t, sz[0], sz[1], Options{Theme: theme})
				press(m, "down", "s")
				m.Update(runSummaryMsg{name: "auth", path: "/src/app/.orcr/runs/auth/summary.md", text: fixtureSummary})
				golden.RequireEqual(t, screen(t, m))
			})
		}
	}
	for _, sz := range [][2]int{{80, 24}, {160, 48}} {
		t.Run(fmt.Sprintf("answer_%dx%d", sz[0], sz[1]), func(t *testing.T) {
			m := openRun(t, sz[0], sz[1], Options{})
			press(m, "down", "a")
			golden.RequireEqual(t, screen(t, m))
		})
	}
}

// runRecorder is the Service behind the runs view in tests: it serves the fixture and
// records the calls that act (anything else panics on the nil embed).
type runRecorder struct {
	mu                    sync.Mutex
	runs                  int
	answer                runapi.RunTextParams
	hold, retry, dispatch runapi.RunMilestonesParams
	fail                  error
}

// transport serves the recorder's methods in-process, as the dashboard's calls reach
// them (any other method is unknown).
func (r *runRecorder) transport(t testing.TB) wire.Transport {
	res := func(v runapi.RunView, err error) (runapi.RunResult, error) { return runapi.RunResult{Run: v}, err }
	ip, err := socket.NewInProcess([]wire.Handler{
		wire.Handle(runapi.RunListM, func(ctx context.Context, _ *wire.Empty) (runapi.RunListResult, error) {
			rs, err := r.Runs(ctx)
			return runapi.RunListResult{Runs: rs}, err
		}),
		wire.Handle(runapi.RunEventsM, func(ctx context.Context, p *runapi.RunEventsParams) (runapi.RunEventsResult, error) {
			es, err := r.RunEvents(ctx, *p)
			return runapi.RunEventsResult{Entries: es}, err
		}),
		wire.Handle(runapi.RunAnswerM, func(ctx context.Context, p *runapi.RunTextParams) (runapi.RunResult, error) {
			return res(r.RunAnswer(ctx, *p))
		}),
		wire.Handle(runapi.RunHoldM, func(ctx context.Context, p *runapi.RunMilestonesParams) (runapi.RunResult, error) {
			return res(r.RunHold(ctx, *p))
		}),
		wire.Handle(runapi.RunRetryM, func(ctx context.Context, p *runapi.RunMilestonesParams) (runapi.RunResult, error) {
			return res(r.RunRetry(ctx, *p))
		}),
		wire.Handle(runapi.RunDispatchM, func(ctx context.Context, p *runapi.RunMilestonesParams) (runapi.RunResult, error) {
			return res(r.RunDispatch(ctx, *p))
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return ip
}

func (r *runRecorder) Runs(context.Context) ([]runapi.RunView, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs++
	return fixtureRuns(), nil
}

func (r *runRecorder) RunEvents(_ context.Context, p runapi.RunEventsParams) ([]runapi.RunEntry, error) {
	return fixtureRunLog(), nil
}

func (r *runRecorder) after(name, m, state string) (runapi.RunView, error) {
	if r.fail != nil {
		return runapi.RunView{}, r.fail
	}
	v := fixtureRuns()[0]
	for i := range v.Milestones {
		if v.Milestones[i].ID == m {
			v.Milestones[i].State = state
		}
	}
	return v, nil
}

func (r *runRecorder) RunAnswer(_ context.Context, p runapi.RunTextParams) (runapi.RunView, error) {
	r.answer = p
	return r.after(p.Name, p.Milestone, "building")
}

func (r *runRecorder) RunHold(_ context.Context, p runapi.RunMilestonesParams) (runapi.RunView, error) {
	r.hold = p
	return r.after(p.Name, p.Milestones[0], "held")
}

func (r *runRecorder) RunRetry(_ context.Context, p runapi.RunMilestonesParams) (runapi.RunView, error) {
	r.retry = p
	return r.after(p.Name, p.Milestones[0], "ready")
}

func (r *runRecorder) RunDispatch(_ context.Context, p runapi.RunMilestonesParams) (runapi.RunView, error) {
	r.dispatch = p
	return r.after(p.Name, p.Milestones[0], "building")
}

// settle runs cmd and the commands its messages lead to, each to its end, feeding each
// message to m, until nothing is left (see doCmd: only timers and blinks are not run).
func settle(t testing.TB, m *Model, cmd tea.Cmd) {
	t.Helper()
	for _, msg := range doCmd(t, cmd) {
		feedModel(t, m, msg)
	}
}

// pressSettle presses keys, running what each one asks for against m's service.
func pressSettle(t testing.TB, m *Model, keys ...string) {
	t.Helper()
	for _, k := range keys {
		_, cmd := m.Update(key(k))
		settle(t, m, cmd)
	}
}

// TestRunsActions: from the run view, each action key leads through its form (or
// none, for dispatch) to its call with the selected milestone, and its outcome is said
// in the status bar and in the view; keys on a milestone in the wrong state say why
// instead of calling.
func TestRunsActions(t *testing.T) {
	rec := &runRecorder{}
	m := newTestModel(t, 120, 40, Options{})
	m.svc = rec.transport(t)
	pressSettle(t, m, "O")
	if rec.runs != 1 || !strings.Contains(plain(screen(t, m)), "csv-import") {
		t.Fatalf("opening read the runs %d times:\n%s", rec.runs, plain(screen(t, m)))
	}
	pressSettle(t, m, "enter", "down", "a")
	typeText(m, "skip bad rows and count them")
	pressSettle(t, m, "enter")
	if rec.answer != (runapi.RunTextParams{Name: "csv-import", Milestone: "M2", Text: "skip bad rows and count them"}) {
		t.Fatalf("answer %+v", rec.answer)
	}
	if !strings.Contains(m.status.notice, "answered M2 of csv-import: now building") {
		t.Fatalf("status %q", m.status.notice)
	}

	// hold asks first; enter (with a reason) is the confirmation
	pressSettle(t, m, "down", "h")
	if rec.hold.Name != "" || m.runsView().mode != runForm {
		t.Fatal("hold called without its form")
	}
	typeText(m, "redo after M2")
	pressSettle(t, m, "enter")
	if rec.hold.Milestones[0] != "M3" || rec.hold.Reason != "redo after M2" {
		t.Fatalf("hold %+v", rec.hold)
	}

	// retry of the failed M4 one tier up: the select's third option below "keep"
	pressSettle(t, m, "down", "r", "down", "down", "down", "enter")
	if rec.retry.Milestones[0] != "M4" || rec.retry.Tier != "high" {
		t.Fatalf("retry %+v", rec.retry)
	}
	// retry of a building milestone is refused in the view, with why
	pressSettle(t, m, "up", "r")
	if rec.retry.Milestones[0] != "M4" || !strings.Contains(plain(screen(t, m)), "only a held or failed milestone is retried") {
		t.Fatalf("retry of building M3 called or unexplained:\n%s", plain(screen(t, m)))
	}
	pressSettle(t, m, "down", "down", "down", "d")
	if rec.dispatch.Milestones[0] != "M6" {
		t.Fatalf("dispatch %+v", rec.dispatch)
	}
	pressSettle(t, m, "up", "a")
	if !strings.Contains(plain(screen(t, m)), "M5 is planned, not asking") {
		t.Fatalf("answer on a planned milestone:\n%s", plain(screen(t, m)))
	}

	// A refused call shows its error in the view and the status bar.
	rec.fail = wire.Errorf(wire.CodeInvalidParams, "M5 waits for M4")
	pressSettle(t, m, "h", "enter")
	if !m.status.isErr || !strings.Contains(m.status.notice, "M5 waits for M4") || !strings.Contains(plain(screen(t, m)), "M5 waits for M4") {
		t.Fatalf("error not shown: status %q\n%s", m.status.notice, plain(screen(t, m)))
	}
	pressSettle(t, m, "esc", "esc")
	if len(m.dialogs) != 0 {
		t.Fatal("esc esc did not close the runs view")
	}
}

// TestRunsCoderInTree: c on a milestone closes the view and selects its coder in the
// tree; a milestone with no coder says so and stays.
func TestRunsCoderInTree(t *testing.T) {
	m := openRun(t, 120, 40, Options{})
	press(m, "down", "down", "c")
	if len(m.dialogs) != 0 || m.tree.sel == nil || m.tree.sel.path != "runs/csv-import/coder-2" || m.focus != focusTree {
		t.Fatalf("after c: %d dialogs, selection %v", len(m.dialogs), m.tree.sel)
	}
	if !strings.Contains(plain(screen(t, m)), "─ runs/csv-import/coder-2 ") {
		t.Fatalf("the preview does not show coder-2:\n%s", plain(screen(t, m)))
	}
	m = openRun(t, 120, 40, Options{})
	press(m, "c") // M1: merged, no coder
	if len(m.dialogs) != 1 || !strings.Contains(plain(screen(t, m)), "M1 has no coder now") {
		t.Fatalf("c on M1:\n%s", plain(screen(t, m)))
	}
}

// TestRunsFollowEvents: run events re-read the runs with one call in flight at most and
// one more for what came meanwhile; the open run's entries join its log; a run.notify
// is said in the status bar; other events cost no call.
func TestRunsFollowEvents(t *testing.T) {
	rec := &runRecorder{}
	m := newTestModel(t, 120, 40, Options{})
	m.svc = rec.transport(t)
	pressSettle(t, m, "O", "enter")
	rec.runs = 0
	ev := func(seq uint64, kind string) wire.Event {
		return wire.Event{Event: runapi.EventRun, Seq: 100 + seq, At: t0, Data: map[string]any{"run": "csv-import", "seq": float64(seq), "type": "fact", "kind": kind, "m": "M6", "text": kind + " text"}}
	}
	_, first := m.Update(eventsMsg{events: []wire.Event{ev(43, "dispatch")}})
	_, second := m.Update(eventsMsg{events: []wire.Event{ev(44, "spawned"), ev(45, "briefed")}})
	if first == nil || !m.runsView().inFlight || !m.runsView().dirty {
		t.Fatal("events did not ask for a read, or the second batch did not wait for it")
	}
	settle(t, m, second)
	if rec.runs != 0 {
		t.Fatalf("the second batch read the runs while a read was in flight (%d)", rec.runs)
	}
	settle(t, m, first)
	if rec.runs != 2 || m.runsView().inFlight {
		t.Fatalf("runs read %d times (want the first and one for the events meanwhile)", rec.runs)
	}
	s := plain(screen(t, m))
	for _, want := range []string{"briefed text", "spawned text", "dispatch text"} {
		if !strings.Contains(s, want) {
			t.Fatalf("log lacks %q:\n%s", want, s)
		}
	}
	_, cmd := m.Update(eventsMsg{events: []wire.Event{{Event: wire.EventAgentState, Seq: 200, At: t0, Agent: &runAgents()[0]}}})
	settle(t, m, cmd)
	if rec.runs != 2 {
		t.Fatal("an agent event re-read the runs")
	}
	m.Update(eventsMsg{events: []wire.Event{{Event: runapi.EventRunNotify, Seq: 201, At: t0, Data: map[string]any{"run": "csv-import", "m": "M2", "text": "the lead has not taken its inbox after 3 sends"}}}})
	if !strings.Contains(m.status.notice, "run csv-import M2: the lead has not taken its inbox") {
		t.Fatalf("status %q", m.status.notice)
	}
}

// TestRunsSummaryFromFile: s on a run with a summary reads the file the run names and
// shows it, scrollable; on a run without one it says when it comes.
func TestRunsSummaryFromFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "summary.md")
	var long strings.Builder
	long.WriteString(fixtureSummary)
	for i := 1; i <= 80; i++ {
		fmt.Fprintf(&long, "line %d of the notes\n", i)
	}
	if err := os.WriteFile(path, []byte(long.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	m := openRunsView(t, 200, 30, Options{})
	press(m, "s")
	if !strings.Contains(plain(screen(t, m)), "no summary yet") {
		t.Fatalf("s on a running run:\n%s", plain(screen(t, m)))
	}
	d := m.runsView()
	d.runs[1].Summary = path
	press(m, "down")
	_, act := d.Update(key("s"))
	ca, ok := act.(callAction)
	if !ok {
		t.Fatalf("s: %#v", act)
	}
	m.Update(ca.fn(context.Background(), nil))
	s := plain(screen(t, m))
	if !strings.Contains(s, "M1 Session cookie  merged") || strings.Contains(s, "|---") || strings.Contains(s, "line 80 of") {
		t.Fatalf("summary:\n%s", s)
	}
	press(m, "pgdown", "pgdown", "pgdown", "pgdown")
	if s := plain(screen(t, m)); !strings.Contains(s, "line 80 of the notes") {
		t.Fatalf("summary scrolled to the end:\n%s", s)
	}
	// Too narrow for its table, each row is its first cell over its pairs.
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 30})
	press(m, "pgup", "pgup", "pgup", "pgup")
	if s := plain(screen(t, m)); !strings.Contains(s, "M1 Session cookie ") || !strings.Contains(s, "state merged · tier planned medium") {
		t.Fatalf("narrow summary:\n%s", s)
	}
	press(m, "esc")
	if d.mode != runView {
		t.Fatal("esc from the summary did not go back to the run")
	}
}

// TestRunsElapsedCounts: a milestone under way keeps counting from the read; a merged
// one does not.
func TestRunsElapsedCounts(t *testing.T) {
	m := openRun(t, 160, 48, Options{})
	m.Update(tickMsg(t0.Add(90 * time.Second)))
	s := plain(screen(t, m))
	if !strings.Contains(s, "41m30s / 15m") || !strings.Contains(s, "25m / 20m") {
		t.Fatalf("elapsed after 90 s:\n%s", s)
	}
}

// TestRunsNoOverflow draws every mode at many sizes: each frame is exactly the
// terminal's size.
func TestRunsNoOverflow(t *testing.T) {
	for _, h := range []int{10, 24, 37} {
		for w := minW; w <= 200; w += 7 {
			m := openRun(t, w, h, Options{})
			screen(t, m)
			press(m, "down")
			screen(t, m)
			press(m, "a")
			screen(t, m)
			press(m, "esc", "esc", "down", "s")
			m.Update(runSummaryMsg{name: "auth", path: "/x/summary.md", text: fixtureSummary})
			screen(t, m)
			press(m, "esc", "esc")
			screen(t, m)
		}
	}
	m := newTestModel(t, 80, 24, Options{})
	press(m, "O")
	m.Update(runsMsg{at: t0})
	if !strings.Contains(plain(screen(t, m)), "no runs; start one") {
		t.Fatal("no hint without runs")
	}
}

// BenchmarkRunViewKeystroke is one key press in the run view (the milestone selection
// moves) plus the frame after it: a run of 20 milestones with a full log, over a tree
// of 1,000 agents.
func BenchmarkRunViewKeystroke(b *testing.B) {
	m := benchModel(b, 1000)
	run := fixtureRuns()[0]
	for len(run.Milestones) < 20 {
		ms := run.Milestones[len(run.Milestones)%6]
		ms.ID = fmt.Sprintf("M%d", len(run.Milestones)+1)
		run.Milestones = append(run.Milestones, ms)
	}
	var log []runapi.RunEntry
	for i := 0; i < runLogKeep; i++ {
		log = append(log, runapi.RunEntry{Seq: uint64(i + 1), At: t0, Type: "fact", Kind: "checked", M: "M3", Text: "check failed"})
	}
	m.Update(key("O"))
	m.Update(runsMsg{runs: []runapi.RunView{run}, at: t0})
	m.Update(key("enter"))
	m.Update(runLogMsg{name: run.Name, entries: log})
	down, up := key("down"), key("up")
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		k := down
		if i%20 >= 10 {
			k = up
		}
		m.Update(k)
		_ = m.View()
	}
}

// TestRunsUndispatched: a ready milestone the lead's last turn left undispatched is
// said in the run's view (with what to do) and counted in the list, even with an
// empty inbox.
func TestRunsUndispatched(t *testing.T) {
	runs := fixtureRuns()
	runs[0].Inbox = []string{}
	const says = "M6 ready, not dispatched: the lead's turn ended without `orcr run dispatch` (auto-start in 14m; `orcr run dispatch csv-import M6` to start it now)"
	runs[0].Milestones[5].Undispatched = says
	m := newTestModel(t, 200, 48, Options{})
	m.Update(listMsg{agents: runAgents()})
	press(m, "O")
	m.Update(runsMsg{runs: runs, at: t0})
	if s := ansi.Strip(screen(t, m)); !strings.Contains(s, "1 not dispatched") {
		t.Fatalf("the list does not count the undispatched milestone:\n%s", s)
	}
	press(m, "enter")
	if s := ansi.Strip(screen(t, m)); !strings.Contains(s, says) {
		t.Fatalf("the run's view does not say M6 was not dispatched:\n%s", s)
	}
}

// TestRunsRefreshWhileOpen: the dashboard's refresh tick reads an open runs view
// again, so a coder's model and a milestone's clock, which change in the run's record
// without a run event, show without ctrl+r; with the server gone it does not try.
func TestRunsRefreshWhileOpen(t *testing.T) {
	rec := &runRecorder{}
	m := newTestModel(t, 120, 40, Options{})
	m.svc = rec.transport(t)
	pressSettle(t, m, "O", "enter")
	rec.runs = 0
	_, cmd := m.Update(refreshMsg(t0))
	settle(t, m, cmd)
	if rec.runs != 1 {
		t.Fatalf("the refresh read the runs %d times, want 1", rec.runs)
	}
	m.Update(subEndedMsg{})
	m.conn = connLost
	_, cmd = m.Update(refreshMsg(t0))
	settle(t, m, cmd)
	if rec.runs != 1 {
		t.Fatalf("the refresh read the runs with the server gone (%d)", rec.runs)
	}
}
