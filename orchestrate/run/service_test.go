package run_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/adapters/shell"
	"orcr/core"
	"orcr/core/socket"
	"orcr/orchestrate"
	"orcr/orchestrate/run"
	runapi "orcr/orchestrate/run/api"
	"orcr/planning"
	"orcr/pty"
	"orcr/sandbox"
	"orcr/store"
	"orcr/testutil/apiclient"
	"orcr/testutil/testbin"
	"orcr/testutil/wait"
	"slices"
)

// rig is a server's worth of kernel, socket and autopilot on a real badger store and
// the embedded pty host, wired as the daemon wires them, with the real orcr binary for
// the coders' `orcr run done` and a real git repository.
type rig struct {
	t    *testing.T
	home string
	repo string
	orcr string
	st   *store.Store
	eng  *core.Engine
	runs *run.Service
	// features are the plans and the runs, started in this order.
	features []core.Feature
	sock     *socket.Server
	svc      *apiclient.Client
	ident    []string
}

var identity = []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}

func newRig(t *testing.T) *rig {
	t.Helper()
	for _, kv := range identity {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v) // the coders' panes inherit the server's environment
	}
	home := shortTemp(t)
	g := &rig{t: t, home: home, repo: t.TempDir(), orcr: testbin.Build(t, "orcr"), ident: identity}
	sh(t, g.repo, "git init -q -b main && echo '# demo' > README.md && git add -A && git commit -qm init")
	g.start()
	return g
}

// shortTemp is a temp dir with a path short enough for a unix socket.
func shortTemp(t *testing.T) string {
	dir, err := os.MkdirTemp("/tmp", "orcr-run-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func (g *rig) start() {
	t := g.t
	st, err := store.Open(filepath.Join(g.home, "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	sockPath := filepath.Join(g.home, "orcr.sock")
	eng, err := core.NewEngine(core.Options{Store: st, Host: pty.New(pty.Options{}), Providers: []core.Provider{shell.New()},
		Home: g.home, Socket: sockPath, Self: g.orcr})
	if err != nil {
		t.Fatal(err)
	}
	plans, err := orchestrate.NewService(orchestrate.ServiceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := run.NewService(run.Options{Home: g.home, GitEnv: g.ident})
	if err != nil {
		t.Fatal(err)
	}
	// Coders are confined by default (DESIGN §16), as the daemon wires it.
	sb := sandbox.New(sandbox.Options{Home: g.home, Self: g.orcr, Socket: sockPath})
	if err := eng.Start(context.Background(), plans, rs, sb); err != nil {
		t.Fatal(err)
	}
	g.features = []core.Feature{plans, rs, sb}
	methods := slices.Concat(core.KernelMethods(eng), plans.Methods(), rs.Methods())
	ip, err := socket.NewInProcess(methods)
	if err != nil {
		t.Fatal(err)
	}
	g.svc = apiclient.Over(ip)
	sock, err := socket.Listen(sockPath, methods, nil)
	if err != nil {
		t.Fatal(err)
	}
	go sock.Serve()
	g.st, g.eng, g.runs, g.sock = st, eng, rs, sock
	t.Cleanup(g.stop)
}

func (g *rig) stop() {
	if g.eng == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	g.sock.Close()
	for i := len(g.features) - 1; i >= 0; i-- {
		g.features[i].Close()
	}
	g.eng.Close(ctx)
	g.st.Close()
	g.eng = nil
}

func sh(t *testing.T, dir, script string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return strings.TrimSpace(string(out))
}

// approve writes plan text into the repository and records it as approved, as the
// plan service does after `orcr plan approve`.
func (g *rig) approve(name, text string) {
	t := g.t
	r, err := orchestrate.NewRecord(name, "r", g.repo, "claude:x", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(r.File), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.File, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	r.State, r.ApprovedHash = orchestrate.PlanApproved, planning.HashBytes([]byte(text))
	if err := orchestrate.NewPlans(core.FeatureBuckets(g.st, orchestrate.Name)).Create(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

func (g *rig) status(name string) runapi.RunView {
	v, err := g.svc.RunStatus(context.Background(), name)
	if err != nil {
		g.t.Fatal(err)
	}
	return v
}

func (g *rig) waitState(name, m, state string, d time.Duration) runapi.RunView {
	g.t.Helper()
	var v runapi.RunView
	ok := wait.Until(d, func() bool {
		v = g.status(name)
		for _, x := range v.Milestones {
			if x.ID == m {
				return x.State == state
			}
		}
		return false
	})
	if !ok {
		g.t.Fatalf("%s of %s never became %s: %+v\nlog:\n%s", m, name, state, v.Milestones, g.eventLog(name))
	}
	return v
}

// eventLog is the run's events, one line each (a failure's account of what happened).
func (g *rig) eventLog(name string) string {
	es, _ := g.svc.RunEvents(context.Background(), runapi.RunEventsParams{Name: name})
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "%d %s %s %s %s\n", e.Seq, e.Type, e.Kind, e.M, firstLine(e.Text))
	}
	return b.String()
}

func firstLine(s string) string { l, _, _ := strings.Cut(s, "\n"); return l }

const twoMilestones = `# Plan: demo
request: two files
check: ls ok-* >/dev/null 2>&1

## M1 · First file
depends: -
tier: small
estimate: 5m

### Goal
Write M1.txt.

### Acceptance
- [ ] M1.txt exists

## M2 · Second file
depends: M1
tier: small

### Goal
Write M2.txt.

### Acceptance
- [ ] M2.txt exists
`

// coderScript is a shell coder: it commits its milestone's file and reports done;
// when a failed check comes back it adds the file the check looks for, commits and
// reports done again.
func coderScript(orcr string) []string {
	return []string{"sh", "-c", `m=$(basename "$PWD")
echo "$m" > "$m.txt" && git add -A && git commit -qm "$m: work" && ` + orcr + ` run done "$m"
while read -r line; do
  case "$line" in
    *"check failed"*) touch "ok-$m" && git add -A && git commit -qm "$m: fix" && ` + orcr + ` run done "$m" ;;
    *"turn ended without"*) ` + orcr + ` run done "$m" ;;
  esac
done`}
}

// TestRunEndToEndWithShellCoders: a run of two dependent milestones with real coders
// in real panes, real worktrees and a real check. M1's first check fails and its
// output goes back to the coder, which fixes it in round 2; M2 starts from the merged
// feature tip and passes at once. feature/demo ends with one commit per milestone and
// finish leaves only it.
func TestRunEndToEndWithShellCoders(t *testing.T) {
	g := newRig(t)
	ctx := context.Background()
	g.approve("demo", twoMilestones)
	if _, err := g.svc.RunDispatch(ctx, runapi.RunMilestonesParams{Name: "demo", Milestones: []string{"M1"}}); err == nil {
		t.Fatal("dispatch before start accepted")
	}
	v, err := g.svc.RunStart(ctx, runapi.RunStartParams{Name: "demo", Coders: 2, Coder: "shell", CoderArgv: coderScript(g.orcr), Lead: "none"})
	if err != nil {
		t.Fatal(err)
	}
	if v.State != "running" || v.Milestones[0].State != "ready" || v.Milestones[1].State != "planned" {
		t.Fatalf("started %+v", v)
	}
	// No lead: the user is told what to dispatch; nothing piles up in an inbox.
	if v = g.status("demo"); len(v.Inbox) != 0 || !strings.Contains(v.Milestones[0].Waits, "your dispatch: `orcr run dispatch demo M1`") {
		t.Fatalf("no-lead run: inbox %q, M1 waits on %q", v.Inbox, v.Milestones[0].Waits)
	}
	if _, err := g.svc.RunStart(ctx, runapi.RunStartParams{Name: "demo"}); err == nil {
		t.Fatal("second start accepted")
	}
	if _, err := g.svc.RunDispatch(ctx, runapi.RunMilestonesParams{Name: "demo", Milestones: []string{"M2"}}); err == nil || !strings.Contains(err.Error(), "waits for M1") {
		t.Fatalf("dispatch of planned M2: %v", err)
	}
	if _, err := g.svc.RunDispatch(ctx, runapi.RunMilestonesParams{Name: "demo", Milestones: []string{"M1"}}); err != nil {
		t.Fatal(err)
	}
	g.waitState("demo", "M1", "merged", 60*time.Second)
	v = g.waitState("demo", "M2", "ready", 5*time.Second)
	if r := v.Milestones[0].Rounds; r.Check != 1 {
		t.Fatalf("M1 should have passed in round 2: rounds %+v", r)
	}
	if _, err := g.svc.RunDispatch(ctx, runapi.RunMilestonesParams{Name: "demo", Milestones: []string{"M2"}}); err != nil {
		t.Fatal(err)
	}
	g.waitState("demo", "M2", "merged", 60*time.Second)
	wait.For(t, 30*time.Second, "the run to finish its final check", func() bool { return g.status("demo").State == "done" })

	if n := sh(t, g.repo, "git rev-list --count main..feature/demo"); n != "2" {
		t.Fatalf("feature/demo has %s commits over main, want one per milestone", n)
	}
	if log := sh(t, g.repo, "git log --format=%s main..feature/demo"); log != "M2: Second file\nM1: First file" {
		t.Fatalf("log %q", log)
	}
	if files := sh(t, g.repo, "git ls-tree --name-only feature/demo | tr '\n' ' '"); files != "M1.txt M2.txt README.md ok-M1" {
		t.Fatalf("tree %q", files)
	}
	// The check output reached the coder (the fix came from its message).
	es, _ := g.svc.RunEvents(ctx, runapi.RunEventsParams{Name: "demo"})
	var kinds []string
	for _, e := range es {
		if e.Type == "fact" {
			kinds = append(kinds, e.Kind)
		}
	}
	if got := strings.Join(kinds, " "); !strings.Contains(got, "dispatch done checked done checked merged-in advanced") {
		t.Fatalf("facts %s", got)
	}
	summary, err := os.ReadFile(run.SummaryFile(g.repo, "demo"))
	if err != nil || !strings.Contains(string(summary), "| M1 First file | merged | small | shell |") {
		t.Fatalf("summary %v:\n%s", err, summary)
	}
	res, err := g.svc.RunFinish(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(res.NotDone, "\n"), "no remote") {
		t.Fatalf("finish without a remote should say so: %+v", res)
	}
	if brs := sh(t, g.repo, "git branch --format='%(refname:short)' | sort | tr '\n' ' '"); brs != "feature/demo main" {
		t.Fatalf("branches after finish %q", brs)
	}
	if wts := sh(t, g.repo, "git worktree list | wc -l"); wts != "1" {
		t.Fatalf("worktrees left: %s", wts)
	}
}

// TestStoppedRunStartsAgain: `run start` of a stopped run resumes it — what the stop
// held goes on — where it said "exists already"; `--fresh` starts it anew from the
// base (a new log, feature/demo made again); a run under way is not discarded.
func TestStoppedRunStartsAgain(t *testing.T) {
	g := newRig(t)
	ctx := context.Background()
	g.approve("demo", twoMilestones)
	start := runapi.RunStartParams{Name: "demo", Coders: 1, Coder: "shell", CoderArgv: coderScript(g.orcr), Lead: "none"}
	if _, err := g.svc.RunStart(ctx, start); err != nil {
		t.Fatal(err)
	}
	if v, err := g.svc.RunStop(ctx, "demo"); err != nil || v.State != "stopped" || v.Milestones[0].State != "held" {
		t.Fatalf("stop: %v %+v", err, v)
	}
	v, err := g.svc.RunStart(ctx, runapi.RunStartParams{Name: "demo"})
	if err != nil {
		t.Fatalf("start of a stopped run: %v", err)
	}
	if v.State != "running" || v.Milestones[0].State != "ready" || v.Milestones[1].State != "planned" {
		t.Fatalf("resumed: %s %+v", v.State, v.Milestones)
	}
	if _, err := g.svc.RunDispatch(ctx, runapi.RunMilestonesParams{Name: "demo", Milestones: []string{"M1"}}); err != nil {
		t.Fatal(err)
	}
	g.waitState("demo", "M1", "merged", 60*time.Second)
	if _, err := g.svc.RunStart(ctx, runapi.RunStartParams{Name: "demo", Fresh: true}); err == nil || !strings.Contains(err.Error(), "run stop demo") {
		t.Fatalf("--fresh of a run under way: %v", err)
	}
	if _, err := g.svc.RunStop(ctx, "demo"); err != nil {
		t.Fatal(err)
	}
	fresh := start
	fresh.Fresh = true
	if v, err = g.svc.RunStart(ctx, fresh); err != nil {
		t.Fatalf("--fresh: %v", err)
	}
	if v.State != "running" || v.Milestones[0].State != "ready" || v.Seq > 3 {
		t.Fatalf("fresh run: %s seq %d %+v", v.State, v.Seq, v.Milestones)
	}
	if n := sh(t, g.repo, "git rev-list --count main..feature/demo"); n != "0" {
		t.Fatalf("feature/demo of the fresh run has %s commits over main", n)
	}
}
