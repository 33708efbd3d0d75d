package run

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
	"orcr/planning"
	"orcr/testutil/wait"
)

// TestAutonomy: coders and the lead accept edits with their allow-list; the reviewer
// gets its list but no edits (a read-only checkout does not stop root), in claude's
// classic prompt mode rather than 2.1.328's default auto mode; the mode comes after
// the variadic list so the prompt is not taken for a tool.
func TestAutonomy(t *testing.T) {
	coder := autonomy("claude", []string{"git add", "orcr run", checkPrefix("sh check.sh --all")}, true)
	if got := strings.Join(coder, " "); got != "--allowedTools Bash(git add:*) Bash(orcr run:*) Bash(sh check.sh:*) --permission-mode acceptEdits" {
		t.Fatalf("coder argv %q", got)
	}
	rev := autonomy("claude", []string{"git diff"}, false)
	if got := strings.Join(rev, " "); got != "--allowedTools Bash(git diff:*) --permission-mode default" {
		t.Fatalf("reviewer argv %q", got)
	}
	for _, bad := range []string{"acceptEdits", "bypassPermissions", "--dangerously-skip-permissions", "auto"} {
		if slices.Contains(rev, bad) || slices.Contains(coder, bad) && bad != "acceptEdits" {
			t.Fatalf("%s in %q / %q", bad, coder, rev)
		}
	}
	if got := strings.Join(autonomy("codex", nil, false), " "); got != "--sandbox read-only --ask-for-approval on-request" {
		t.Fatalf("codex reviewer %q", got)
	}
	if got := strings.Join(autonomy("codex", nil, true), " "); got != "--sandbox workspace-write --ask-for-approval on-request" {
		t.Fatalf("codex coder %q", got)
	}
	if autonomy("shell", []string{"git add"}, true) != nil {
		t.Fatal("shell coders take no autonomy flags")
	}
}

// fakeAgents is the kernel's agent side as the autopilot sees it, recording calls.
type fakeAgents struct {
	mu     sync.Mutex
	agents map[string]wire.Agent
	calls  []string
}

func (f *fakeAgents) Run(_ context.Context, p wire.RunParams) (wire.Agent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := wire.Agent{ID: fmt.Sprintf("a%d", len(f.agents)+1), Path: p.Path, Cwd: p.Cwd, Prompt: p.Prompt, State: wire.StateWorking,
		Provider: p.Provider, Model: p.Model}
	f.agents[a.ID] = a
	f.calls = append(f.calls, "run "+p.Path)
	return a, nil
}

func (f *fakeAgents) Get(_ context.Context, id string) (wire.Agent, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if a, ok := f.agents[id]; ok {
		return a, nil
	}
	return wire.Agent{}, wire.Errorf(wire.CodeNotFound, "no agent %s", id)
}

func (f *fakeAgents) Send(_ context.Context, p wire.SendParams) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "send "+p.Target)
	return nil
}

func (f *fakeAgents) Kill(_ context.Context, p wire.KillParams) (wire.KillResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	a := f.agents[p.Glob]
	a.State = wire.StateKilled
	f.agents[p.Glob] = a
	f.calls = append(f.calls, "kill "+p.Glob)
	return wire.KillResult{}, nil
}

func (f *fakeAgents) Subscribe(context.Context, wire.SubscribeParams) (<-chan wire.Event, error) {
	return nil, nil
}

// fakeKernel is the kernel these tests give the autopilot: fakeAgents for the
// agents, events dropped, and the feature's buckets on a real store. The other
// methods of core.Kernel are nil: the code under test must not call them.
type fakeKernel struct {
	core.Kernel
	fa *fakeAgents
	st core.Buckets
}

func (fakeKernel) Publish(_ context.Context, ev wire.Event) (wire.Event, error) { return ev, nil }
func (fakeKernel) CallerAgent(context.Context) (*wire.Agent, error)             { return nil, nil }
func (fakeKernel) Readmit()                                                     {}
func (k fakeKernel) Buckets() core.Buckets                                      { return k.st }
func (k fakeKernel) Run(ctx context.Context, p wire.RunParams) (wire.Agent, error) {
	return k.fa.Run(ctx, p)
}
func (k fakeKernel) Get(ctx context.Context, id string) (wire.Agent, error) { return k.fa.Get(ctx, id) }
func (k fakeKernel) Send(ctx context.Context, p wire.SendParams) error      { return k.fa.Send(ctx, p) }
func (k fakeKernel) Kill(ctx context.Context, p wire.KillParams) (wire.KillResult, error) {
	return k.fa.Kill(ctx, p)
}

// newFakeService is a Service over fa and a real store in a temporary directory,
// bound as Start binds it but with nothing started.
func newFakeService(t *testing.T, fa *fakeAgents, home string) *Service {
	t.Helper()
	s, err := NewService(Options{Home: home, GitEnv: testIdentity})
	if err != nil {
		t.Fatal(err)
	}
	st := core.FeatureBuckets(openStore(t, t.TempDir()), Name)
	s.k, s.st, s.runs = fakeKernel{fa: fa, st: st}, st, NewRuns(st)
	return s
}

// TestEachReviewIsAFreshReviewer: a review goes to a new reviewer agent, never typed
// into the one that gave the last verdict — whose last message stays that verdict
// through a turn that fails or says nothing, and would read as approval. The same
// review performed again while it is under way (after a restart) starts nothing.
func TestEachReviewIsAFreshReviewer(t *testing.T) {
	ctx := context.Background()
	repo, g := newRepo(t)
	head, _ := g.Rev(ctx, "HEAD")
	fa := &fakeAgents{agents: map[string]wire.Agent{}}
	s := newFakeService(t, fa, t.TempDir())
	r := newRun(t, 2, true, "M1::small", "M2::small")
	rec, err := s.runs.Create(ctx, Record{Run: r, Repo: repo, Reviewer: "claude", Check: "true"}, nil, t0)
	if err != nil {
		t.Fatal(err)
	}
	// The reviewer approved M1 and is done, live.
	fa.agents["old"] = wire.Agent{ID: "old", Path: AgentPath("demo", "reviewer"), State: wire.StateDone, LastMessage: "VERDICT: approve"}
	rec, _ = s.runs.Update(ctx, "demo", func(r *Record) { r.Agents = map[string]string{"reviewer": "old"} })

	if _, err := s.review(ctx, rec, Action{Kind: AReview, M: "M2", Head: head}); err != nil {
		t.Fatal(err)
	}
	rec, _ = s.runs.Get(ctx, "demo")
	fresh := rec.Agents["reviewer"]
	if got := strings.Join(fa.calls, ", "); got != "kill old, run runs/demo/reviewer" || fresh == "old" {
		t.Fatalf("calls %q, reviewer %s: the review was not a fresh agent", got, fresh)
	}
	if a, _ := fa.Get(ctx, fresh); a.LastMessage != "" || !strings.Contains(a.Prompt, "You review milestone M2") {
		t.Fatalf("fresh reviewer %+v", a)
	}
	// Performed again while that review is under way: nothing new.
	if _, err := s.review(ctx, rec, Action{Kind: AReview, M: "M2", Head: head}); err != nil {
		t.Fatal(err)
	}
	if len(fa.calls) != 2 {
		t.Fatalf("the review under way was restarted: %q", fa.calls)
	}
	// Its turn ended while no server watched: performed again, the review returns
	// that turn's verdict (with the turn's end, so Step takes it in once).
	a := fa.agents[fresh]
	a.State, a.StateAt, a.LastMessage = wire.StateDone, time.Now(), "VERDICT: changes"
	fa.agents[fresh] = a
	f, err := s.review(ctx, rec, Action{Kind: AReview, M: "M2", Head: head})
	if err != nil || f == nil || f.Kind != FReviewed || f.M != "M2" || f.Verdict.Decision != "changes" || !f.TurnAt.Equal(a.StateAt) || len(fa.calls) != 2 {
		t.Fatalf("a finished review performed again: %+v, %v, calls %q", f, err, fa.calls)
	}
	// Its turn ended without a verdict: the retry is a fresh agent again.
	a.LastMessage = ""
	fa.agents[fresh] = a
	if _, err := s.review(ctx, rec, Action{Kind: AReview, M: "M2", Head: head, Text: "retry"}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(fa.calls[2:], ", "); got != "kill "+fresh+", run runs/demo/reviewer" {
		t.Fatalf("retry calls %q", got)
	}
}

// TestTurnEndAfterABusySend: a message typed into a coder while it works (a check
// failure arriving as the turn that called `run done` ends) is either taken up in
// that turn or starts the next one. The turn end waits TurnSettle: if a new turn
// started meanwhile, it is not the coder's answer and no "your turn ended without
// `run done`" goes out; if none did, it counts.
func TestTurnEndAfterABusySend(t *testing.T) {
	defer func(d time.Duration) { TurnSettle = d }(TurnSettle)
	TurnSettle = 100 * time.Millisecond
	ctx := context.Background()
	fa := &fakeAgents{agents: map[string]wire.Agent{}}
	s := newFakeService(t, fa, t.TempDir())
	s.ctx, s.cancel = context.WithCancel(ctx)
	defer s.Close()
	// Two coders, each in a check-fix round (their done had no commits).
	r := newRun(t, 2, false, "M1::small", "M2::small")
	var err error
	for _, f := range []Fact{{Kind: FDispatch, M: "M1"}, {Kind: FDispatch, M: "M2"},
		{Kind: FDone, M: "M1", Coder: "coder-1"}, {Kind: FDone, M: "M2", Coder: "coder-2"}} {
		if r, _, err = Step(r, f, t0); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.runs.Create(ctx, Record{Run: r, Repo: t.TempDir(), Check: "true",
		Agents: map[string]string{"coder-1": "c1", "coder-2": "c2"}}, nil, t0); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"c1", "c2"} {
		fa.agents[id] = wire.Agent{ID: id, State: wire.StateWorking, StateAt: time.Now()}
	}
	for _, who := range []string{"coder-1", "coder-2"} {
		if err := s.send(ctx, "demo", who, "The check failed for …"); err != nil {
			t.Fatal(err)
		}
	}
	turnEnds := func(coder string) int {
		es, _ := s.runs.Events(ctx, "demo", 0, 0)
		n := 0
		for _, e := range es {
			if e.Fact != nil && e.Fact.Kind == FTurnEnded && e.Fact.Coder == coder {
				n++
			}
		}
		return n
	}
	end := func(id, who string) {
		a := fa.agents[id]
		a.State, a.StateAt = wire.StateDone, time.Now().Add(time.Millisecond)
		fa.mu.Lock()
		fa.agents[id] = a
		fa.mu.Unlock()
		rec, _ := s.runs.Get(ctx, "demo")
		s.onCoder(ctx, rec, who, a)
	}
	end("c2", "coder-2") // first, so its wait is over before coder-1's
	end("c1", "coder-1")
	if turnEnds("coder-1")+turnEnds("coder-2") != 0 {
		t.Fatal("a turn end right after a busy send counted at once")
	}
	// coder-2 starts the next turn with the message; coder-1 stays done.
	fa.mu.Lock()
	a := fa.agents["c2"]
	a.State, a.StateAt = wire.StateWorking, time.Now().Add(2*time.Millisecond)
	fa.agents["c2"] = a
	fa.mu.Unlock()
	if !wait.Until(5*time.Second, func() bool { return turnEnds("coder-1") == 1 }) {
		t.Fatal("coder-1's turn end never counted")
	}
	if n := turnEnds("coder-2"); n != 0 {
		t.Fatalf("coder-2's turn end counted %d times though a new turn took the message up", n)
	}
}

// TestTextsCallOrcrByPath: a text typed into an agent calls orcr by the path of the
// running orcr, one shell word even with a space in it; without a known path it
// keeps "$ORCR_BIN".
func TestTextsCallOrcrByPath(t *testing.T) {
	text := "Fix it, commit, and run `" + Bin + " run done M1`."
	for bin, want := range map[string]string{
		"/usr/local/bin/orcr": "`/usr/local/bin/orcr run done M1`",
		"/home/a b/bin/orcr":  "`'/home/a b/bin/orcr' run done M1`",
		"/home/it's/bin/orcr": "`'/home/it'\\''s/bin/orcr' run done M1`",
		"":                    "`\"$ORCR_BIN\" run done M1`",
	} {
		s := &Service{o: Options{Bin: bin}}
		if got := s.toAgent(text); !strings.Contains(got, want) {
			t.Errorf("bin %q: %q, want %s", bin, got, want)
		}
	}
	if got := forUser("M1 is ready: dispatch it with `" + Bin + " run dispatch csv M1`"); !strings.Contains(got, "`orcr run dispatch csv M1`") {
		t.Errorf("for the user: %q", got)
	}
	if got := forAgent("held: `orcr run retry csv M1` once merged"); !strings.Contains(got, "`"+Bin+" run retry csv M1`") {
		t.Errorf("for an agent: %q", got)
	}
}

// TestTurnEndAfterDoneReadsNoGit: the turn that called `run done` ends while the
// milestone is being checked; Step ignores that turn end, so it starts no git process.
// A turn that ends while the coder works is looked at (the branch's tip and commits).
func TestTurnEndAfterDoneReadsNoGit(t *testing.T) {
	ctx := context.Background()
	repo, g := newRepo(t)
	feat, err := g.EnsureBranch(ctx, FeatureBranch("demo"), "main")
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	fa := &fakeAgents{agents: map[string]wire.Agent{}}
	s := newFakeService(t, fa, home)
	s.ctx, s.cancel = context.WithCancel(ctx)
	defer s.Close()
	r := newRun(t, 2, false, "M1::small", "M2::small")
	r.Feature = feat
	for _, f := range []Fact{{Kind: FDispatch, M: "M1"}, {Kind: FDispatch, M: "M2"}, {Kind: FDone, M: "M1", Coder: "coder-1", Commits: 1, Head: feat}} {
		if r, _, err = Step(r, f, t0); err != nil {
			t.Fatal(err)
		}
	}
	if m, _ := r.Milestone("M1"); m.State != Checking {
		t.Fatalf("M1 is %s", m.State)
	}
	if _, err := s.runs.Create(ctx, Record{Run: r, Repo: repo, Check: "true", Mode: "shared",
		Agents: map[string]string{"coder-1": "c1", "coder-2": "c2"}}, nil, t0); err != nil {
		t.Fatal(err)
	}
	before := gitProcs.Load()
	if _, err := s.apply(ctx, "demo", Fact{Kind: FTurnEnded, M: "M1", Coder: "coder-1"}); err != nil {
		t.Fatal(err)
	}
	if n := gitProcs.Load() - before; n != 0 {
		t.Errorf("the turn end after done started %d git processes, want none", n)
	}
	before = gitProcs.Load()
	if _, err := s.apply(ctx, "demo", Fact{Kind: FTurnEnded, M: "M2", Coder: "coder-2"}); err != nil {
		t.Fatal(err)
	}
	if n := gitProcs.Load() - before; n == 0 {
		t.Error("a turn end while the coder works did not look at its branch")
	}
}

// TestReviewerOfAProviderRunsTheCatalogsModel: `--reviewer claude` reviews a small
// milestone on the catalog's claude model for the review tier (medium: judging work
// takes at least medium reasoning), not on claude's default (which the catalog marks
// premium); `--reviewer claude:M` runs M.
func TestReviewerOfAProviderRunsTheCatalogsModel(t *testing.T) {
	ctx := context.Background()
	repo, g := newRepo(t)
	head, _ := g.Rev(ctx, "HEAD")
	cat, err := planning.Load(planning.DefaultFS, "")
	if err != nil {
		t.Fatal(err)
	}
	want := ""
	for _, m := range cat.Pick("medium", false, nil) {
		if m.Provider == "claude" {
			want = m.ID
			break
		}
	}
	if want == "" {
		t.Fatal("the catalog has no claude model for medium work")
	}
	for reviewer, model := range map[string]string{"claude": want, "claude:claude-x": "claude-x"} {
		fa := &fakeAgents{agents: map[string]wire.Agent{}}
		s := newFakeService(t, fa, t.TempDir())
		rec, err := s.runs.Create(ctx, Record{Run: newRun(t, 1, true, "M1::small"), Repo: repo, Reviewer: reviewer, Check: "true"}, nil, t0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.review(ctx, rec, Action{Kind: AReview, M: "M1", Head: head}); err != nil {
			t.Fatal(err)
		}
		rec, _ = s.runs.Get(ctx, "demo")
		if a := fa.agents[rec.Agents["reviewer"]]; a.Provider != "claude" || a.Model != model {
			t.Errorf("--reviewer %s runs %s:%s, want claude:%s", reviewer, a.Provider, a.Model, model)
		}
	}
}
