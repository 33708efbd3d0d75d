package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/socket"
	"orcr/core/wire"
	"orcr/orchestrate"
	"orcr/orchestrate/run"
	runapi "orcr/orchestrate/run/api"
	"orcr/planning"
	"orcr/store"
	"orcr/testutil/apiclient"
	"orcr/testutil/clis"
	"orcr/testutil/modelserver"
	"orcr/testutil/wait"
)

// killPlan is six milestones with dependencies and parallelism:
//
//	M1   M2
//	|  \  |
//	M3   M4
//	|     |
//	M5    |
//	  \   |
//	    M6
const killPlanBody = `request: six parts
check: test ! -e fixme && for f in M*.txt; do grep -q . "$f" || exit 1; done

## M1 · One
depends: -
tier: small

### Goal
Write M1.txt.

### Acceptance
- [ ] M1.txt

## M2 · Two
depends: -
tier: small

### Goal
Write M2.txt.

### Acceptance
- [ ] M2.txt

## M3 · Three
depends: M1
tier: small

### Goal
Write M3.txt from M1.

### Acceptance
- [ ] M3.txt

## M4 · Four
depends: M1, M2
tier: small

### Goal
Write M4.txt from M1 and M2.

### Acceptance
- [ ] M4.txt

## M5 · Five
depends: M3
tier: small

### Goal
Write M5.txt from M3.

### Acceptance
- [ ] M5.txt

## M6 · Six
depends: M4, M5
tier: small

### Goal
Write M6.txt from M4 and M5.

### Acceptance
- [ ] M6.txt
`

// killCoder is a shell coder for killPlan. Its file holds its name and its
// dependencies' files, so the content shows it was built on the merged work it
// depends on. M2's first commit leaves a file the check refuses; the failed check's
// message makes it remove the file (a fix round). Each start is appended to starts,
// so a milestone given to two coders shows twice.
func killCoder(orcr, starts string) []string {
	return killCoderFrom(orcr, starts, `m=$(basename "$PWD")`)
}

// killCoderShared is killCoder in the repository's own folder (shared mode), whose
// name says nothing: the milestone comes from the brief.
func killCoderShared(orcr, starts string) []string {
	return killCoderFrom(orcr, starts, `m=$(printf '%s' "$ORCR_PROMPT" | sed -n 's/.*building milestone \([A-Z0-9]*\):.*/\1/p' | head -n 1)`)
}

func killCoderFrom(orcr, starts, which string) []string {
	return []string{"sh", "-c", which + `
echo "$m $ORCR_PATH" >> ` + starts + `
case "$m" in M3) deps=M1;; M4) deps="M1 M2";; M5) deps=M3;; M6) deps="M4 M5";; *) deps=;; esac
{ echo "$m"; for d in $deps; do cat "$d.txt" 2>/dev/null || echo "missing $d"; done; } > "$m.txt"
[ "$m" = M2 ] && echo todo > fixme
sleep 0.2
git add -A && git commit -qm "$m: work"
` + orcr + ` run done "$m"
while read -r line; do
  case "$line" in
    *"check failed"*) rm -f fixme; git add -A; git commit -qm "$m: fix"; ` + orcr + ` run done "$m" ;;
    *"turn ended without"*|*"uncommitted"*|*"no commits"*) git add -A; git commit -qm "$m: rest"; ` + orcr + ` run done "$m" ;;
  esac
done`}
}

// TestRunSurvivesKill9 runs the same six-milestone plan twice through the real binary
// on the tmux host (coders' panes outlive the server): once undisturbed, once with
// `orcr serve` killed by SIGKILL at 20 moments and started again each time — at
// random seqs of the run's log, right after a dispatch (before the coder's spawn),
// and right after feature/NAME moved (before the "advanced" fact). The killed run
// completes with no milestone started twice, one commit per milestone, a log whose
// seqs are contiguous, and the same tree on feature/NAME as the undisturbed run.
func TestRunSurvivesKill9(t *testing.T) { runSurvivesKill9(t, "worktree", false) }

// TestRunSurvivesKill9Shared is TestRunSurvivesKill9 in shared mode: the coders work
// one at a time in the repository's own folder, which ends on main with .orcr/ in
// place and never committed.
func TestRunSurvivesKill9Shared(t *testing.T) { runSurvivesKill9(t, "shared", false) }

// TestRunSurvivesKill9Reviewed is TestRunSurvivesKill9 with a reviewer: every
// milestone is reviewed by the real claude CLI (the scripted model server approves
// each one) before it merges, so the kills also land while a review is asked for,
// under way or its verdict not yet applied. Each milestone's verdict is applied once.
// A shell program cannot review: the shell provider has no turn end and no last
// message, which is what the run reads a verdict from.
func TestRunSurvivesKill9Reviewed(t *testing.T) { runSurvivesKill9(t, "worktree", true) }

func runSurvivesKill9(t *testing.T, mode string, reviewed bool) {
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux is required: %v (apt-get install tmux)", err)
	}
	ident := []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}
	vars := append([]string{"ORCR_HOST=tmux", "TMUX_TMPDIR=" + t.TempDir()}, ident...)
	reviewer := []string{}
	if reviewed {
		// Every conversation request gets the default reply: an approval, so each
		// review, however often a kill makes the run ask again, approves.
		ms, err := modelserver.Start()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(ms.Close)
		ms.SetDefault(say("The milestone's file is there.\n\nVERDICT: approve"))
		dir := settledTempDir(t)
		// HOME is empty: claude's Bash sources no user shell setup.
		os.MkdirAll(filepath.Join(dir, "user"), 0o700)
		vars = append(append(vars, clis.ScriptedClaude(t, dir, ms.URL)...), "HOME="+filepath.Join(dir, "user"))
		reviewer = []string{"--reviewer", "claude"}
	}
	e := newEnv(t, vars...)
	t.Cleanup(func() { exec.Command("tmux", "-S", filepath.Join(e.home, "tmux.sock"), "kill-server").Run() })
	if reviewed {
		// The reviewers' claude processes outlive the killed servers: they are ended
		// (the last server knows their pids) before the test's directories go.
		t.Cleanup(func() { stopAgentProcs(t, e, "runs/**") })
	}
	repo := t.TempDir()
	// The run itself makes git ignore .orcr/ (shared mode's coders `git add -A` in
	// the repository's folder, where the plan is).
	gitSh(t, repo, ident, "git init -q -b main && echo '# demo' > README.md && git add -A && git commit -qm init")
	seedPlans(t, e.home, repo, "ref", "crash")
	starts := filepath.Join(t.TempDir(), "starts")
	start := func(name string, reviewer []string) {
		coder := killCoder(e.bin, starts+"."+name)
		if mode == "shared" {
			coder = killCoderShared(e.bin, starts+"."+name)
		}
		args := append(append([]string{"run", "start", name, "--mode", mode, "--coders", "2", "--coder", "shell", "--lead", "none"}, reviewer...), "--")
		args = append(args, coder...)
		e.must(args...)
	}

	// The undisturbed run, with no reviewer even when the killed run has one: a
	// reviewer reads a read-only checkout and every verdict here approves, so the tree
	// an undisturbed run leaves on feature/NAME is the same with or without reviews,
	// and the reference only needs that tree and the length of its log (where the
	// kills' seqs are spread). Reviewed, it started the real claude for each of the
	// six reviews: 50 s of the test's 97 at a load of 21 (the crash run's reviews are
	// what the test is about, and they stay).
	began := time.Now()
	e.serve()
	start("ref", nil)
	lead := &testLead{e: e, name: "ref"}
	if !wait.Until(120*time.Second, func() bool { return lead.step() == "done" }) {
		t.Fatalf("ref did not complete:\n%s", e.must("run", "status", "ref"))
	}
	lead.drop()
	refTook := time.Since(began)
	refSeq := lead.view.Seq
	t.Logf("undisturbed run: %s, %d log entries", refTook.Round(time.Millisecond), refSeq)

	// The same plan, killed 20 times.
	began = time.Now()
	start("crash", reviewer)
	lead = &testLead{e: e, name: "crash"}
	defer lead.drop()
	rnd := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 2))
	// Each kill comes at the next of 20 random seqs (or the next entry, once the log
	// is past it) or a random instant up to 1.5 s
	// on (a coder's turn end is seen after 1.2 s of quiet), whichever is first, or sooner at the moment its
	// kind looks for: right after one of the lead's dispatches (the brief — worktree,
	// the coder's spawn — is performed after the call returns), or the moment the ref
	// file moves during a merge (before the "advanced" fact is logged).
	caught := map[string]int{}
	kills := 0
	refFile := filepath.Join(repo, ".git", "refs", "heads", "feature", "crash")
	// 20 distinct seqs spread over the first half of the undisturbed run's log: a kill
	// that finds the log past its seq comes at the next entry, and a run whose coders'
	// reports no longer wait on a refusal (session 17) finished once after 18 kills with
	// the seqs over two thirds.
	targets := rnd.Perm(max(int(refSeq/2)-2, 20))[:20]
	sort.Ints(targets)
	for kills < 20 {
		kind := []string{"seq", "seq", "dispatch", "advance"}[rnd.IntN(4)]
		target := max(uint64(targets[kills]+2), lead.view.Seq+1)
		at := time.Now().Add(time.Duration(rnd.IntN(1500)) * time.Millisecond)
		state, why := "", ""
		ok := wait.Every(30*time.Second, 5*time.Millisecond, func() bool {
			state = lead.step()
			switch {
			case state == "done":
				return true
			case lead.view.Seq >= target:
				why = "seq"
				return true
			case time.Now().After(at):
				why = "time"
				return true
			case kind == "dispatch" && lead.dispatched:
				time.Sleep(time.Duration(rnd.IntN(150)) * time.Millisecond)
				why = "dispatch"
				return true
			case kind == "advance" && lead.merging():
				// Back to back: the kill must land right after the ref moves.
				if wait.Every(2*time.Second, 0, func() bool {
					b, err := os.ReadFile(refFile)
					return err == nil && strings.TrimSpace(string(b)) != lead.view.Tip
				}) {
					why = "advance"
					return true
				}
			}
			return false
		})
		if !ok {
			t.Fatalf("crash stuck at seq %d (waiting for seq %d):\n%s", lead.view.Seq, target, runDump(e, "crash"))
		}
		if state == "done" {
			break
		}
		e.kill9()
		lead.drop()
		kills++
		w := what(t, e.home, repo, "crash")
		caught[w]++
		t.Logf("kill %d (%s) after seq %d: %s", kills, why, lead.view.Seq, w)
		e.serve()
	}
	if !wait.Until(120*time.Second, func() bool { return lead.step() == "done" }) {
		t.Fatalf("crash did not complete after %d kills:\n%s", kills, runDump(e, "crash"))
	}
	t.Logf("killed run: %s with %d kills, %d log entries; the kills caught %v", time.Since(began).Round(time.Millisecond), kills, lead.view.Seq, caught)
	if kills < 20 {
		t.Errorf("the run completed after %d kills; the test wants 20 moments", kills)
	}

	// One commit per milestone, none twice, the same tree as the undisturbed run.
	for _, name := range []string{"ref", "crash"} {
		subjects := gitSh(t, repo, nil, "git log --format=%s main..feature/"+name+" | sort | tr '\n' ','")
		if subjects != "M1: One,M2: Two,M3: Three,M4: Four,M5: Five,M6: Six," {
			t.Errorf("feature/%s commits: %q (want one per milestone)", name, subjects)
		}
	}
	refTree := gitSh(t, repo, nil, "git rev-parse feature/ref^{tree}")
	crashTree := gitSh(t, repo, nil, "git rev-parse feature/crash^{tree}")
	if refTree != crashTree {
		t.Errorf("feature/crash tree %s differs from feature/ref %s:\n%s", crashTree, refTree, gitSh(t, repo, nil, "git diff --stat feature/ref feature/crash"))
	}
	if m6 := gitSh(t, repo, nil, "git show feature/crash:M6.txt | tr '\n' ' '"); m6 != "M6 M4 M1 M2 M5 M3 M1" {
		t.Errorf("M6.txt on feature/crash is %q: not built on its merged dependencies", m6)
	}
	if mode == "shared" {
		var cur string
		if !wait.Until(30*time.Second, func() bool { cur = gitSh(t, repo, nil, "git rev-parse --abbrev-ref HEAD"); return cur == "main" }) {
			t.Errorf("the repository is left on %s, want main", cur)
		}
		if _, err := os.Stat(filepath.Join(repo, ".orcr", "plans", "crash.md")); err != nil {
			t.Errorf(".orcr/ did not survive the run: %v", err)
		}
		if n := gitSh(t, repo, nil, "git ls-tree -r --name-only feature/crash | grep -c '^.orcr/' || true"); n != "0" {
			t.Errorf("feature/crash holds %s files of .orcr/", n)
		}
	}
	// No milestone started by two coders.
	for _, name := range []string{"ref", "crash"} {
		b, err := os.ReadFile(starts + "." + name)
		if err != nil {
			t.Fatal(err)
		}
		per := map[string][]string{}
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			m, who, _ := strings.Cut(l, " ")
			per[m] = append(per[m], who)
		}
		for m, whos := range per {
			if len(whos) != 1 {
				t.Errorf("%s: %s was started %d times: %v\n%s", name, m, len(whos), whos, runDump(e, name))
			}
		}
		if len(per) != 6 {
			t.Errorf("%s: %d milestones started, want 6: %v", name, len(per), per)
		}
	}
	// The log: contiguous seqs from 1, and every milestone advanced exactly once.
	es, err := e.client().RunEvents(context.Background(), runapi.RunEventsParams{Name: "crash"})
	if err != nil {
		t.Fatal(err)
	}
	advanced, verdicts := map[string]int{}, map[string]int{}
	for i, en := range es {
		if en.Seq != uint64(i+1) {
			t.Fatalf("log entry %d has seq %d: an entry is missing", i+1, en.Seq)
		}
		if en.Type == "fact" && en.Kind == "advanced" && !strings.Contains(en.Text, "ignored") {
			advanced[en.M]++
		}
		if en.Type == "fact" && en.Kind == "reviewed" && !strings.Contains(en.Text, "ignored") {
			verdicts[en.M]++
		}
	}
	for i := 1; i <= 6; i++ {
		m := fmt.Sprintf("M%d", i)
		if advanced[m] != 1 {
			t.Errorf("%s advanced %d times in the log", m, advanced[m])
		}
		if want := map[bool]int{true: 1}[reviewed]; verdicts[m] != want {
			t.Errorf("%s's verdict was applied %d times, want %d:\n%s", m, verdicts[m], want, runDump(e, "crash"))
		}
	}
}

// testLead plays the lead: it dispatches what is ready and waits for the lead.
type testLead struct {
	e          *env
	name       string
	view       runapi.RunView
	dispatched bool              // the last step dispatched something
	c          *apiclient.Client // kept while the server lives, so a poll is quick
}

// step reads the run's status and dispatches the milestones that wait for the lead;
// it returns the run's state ("" while the server does not answer).
func (l *testLead) step() string {
	l.dispatched = false
	ctx, cancel := context.WithTimeout(context.Background(), wait.Scale(5*time.Second))
	defer cancel()
	if l.c == nil {
		c, err := apiclient.Dial(ctx, socket.SocketPath(l.e.home), "")
		if err != nil {
			return ""
		}
		l.c = c
	}
	c := l.c
	v, err := c.RunStatus(ctx, l.name)
	if err != nil {
		c.Close()
		l.c = nil // the server went: dial the next one
		return ""
	}
	l.view = v
	var ready []string
	for _, m := range v.Milestones {
		if m.State == "ready" && strings.Contains(m.Waits, "dispatch") { // not yet dispatched (else it waits for a coder)
			ready = append(ready, m.ID)
		}
	}
	if len(ready) > 0 {
		if v2, err := c.RunDispatch(ctx, runapi.RunMilestonesParams{Name: l.name, Milestones: ready}); err == nil {
			l.view, l.dispatched = v2, true
		}
	}
	return l.view.State
}

// drop closes the lead's connection (its server is gone).
func (l *testLead) drop() {
	if l.c != nil {
		l.c.Close()
		l.c = nil
	}
}

// merging reports a milestone whose merge is under way.
func (l *testLead) merging() bool {
	return slices.ContainsFunc(l.view.Milestones, func(m runapi.RunMilestone) bool {
		return m.State == "merging" && m.Waits == "the merge"
	})
}

// what reads the killed server's store (read-only) and the repository and names the
// window the kill caught: an action asked for and not performed (a brief: between
// the dispatch and the coder's spawn), feature/NAME moved with its "advanced" fact
// not logged, or a fact logged whose record was not written.
func what(t *testing.T, home, repo, name string) string {
	t.Helper()
	// A child the server was forking (git) holds a copy of the store's lock until
	// its exec closes it, a moment after the server is gone.
	var st *store.Store
	var err error
	wait.Until(5*time.Second, func() bool {
		st, err = store.Open(filepath.Join(home, "store"), nil)
		return err == nil
	})
	if err != nil {
		lock, _ := os.ReadFile(filepath.Join(home, "store", "LOCK"))
		ps, _ := exec.Command("ps", "-eo", "pid,ppid,stat,args").Output()
		t.Fatalf("open the killed server's store: %v\nLOCK: %s\n%s", err, lock, ps)
	}
	defer st.Close()
	ctx := context.Background()
	runs := core.FeatureBuckets(st, run.Name)
	b, err := runs.Get(ctx, run.RunsBucket, name)
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		Rec run.Record `json:"rec"`
	}
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatal(err)
	}
	rec := env.Rec
	var tail int
	if err := runs.Scan(ctx, "runlog."+name, func(k string, _ []byte) bool {
		if k > fmt.Sprintf("%020d", rec.Seq) {
			tail++
		}
		return true
	}); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, p := range rec.Outbox {
		kinds = append(kinds, string(p.Action.Kind))
	}
	sort.Strings(kinds)
	tip := gitSh(t, repo, nil, "git rev-parse feature/"+name)
	switch {
	case tip != rec.Run.Feature:
		return "ref moved, advanced not logged"
	case tail > 0:
		return "fact logged, record not written"
	case slices.Contains(kinds, string(run.ABrief)):
		return "brief pending"
	case len(kinds) > 0:
		return "pending " + strings.Join(slices.Compact(kinds), "+")
	}
	return "between actions"
}

// seedPlans records approved plans of killPlanBody for names in repo's store, as
// `orcr plan approve` leaves them (the plan's lead is not what this test is about).
func seedPlans(t *testing.T, home, repo string, names ...string) {
	t.Helper()
	seedPlansText(t, home, repo, killPlanBody, names...)
}

// seedPlansText records approved plans of body (the part after the title).
func seedPlansText(t *testing.T, home, repo, body string, names ...string) {
	t.Helper()
	st, err := store.Open(filepath.Join(home, "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, name := range names {
		r, err := orchestrate.NewRecord(name, "a request", repo, "claude:x", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		text := "# Plan: " + name + "\n" + body
		if err := os.MkdirAll(filepath.Dir(r.File), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(r.File, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		r.State, r.ApprovedHash, r.FileHash = orchestrate.PlanApproved, planning.HashBytes([]byte(text)), planning.HashBytes([]byte(text))
		if err := orchestrate.NewPlans(core.FeatureBuckets(st, orchestrate.Name)).Create(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
}

// gitIdent is the git identity the run tests commit with.
var gitIdent = []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t"}

// newRepoEnv is an env whose server commits as gitIdent, and a repository on main with
// one commit whose .orcr is excluded, for a run's plan.
func newRepoEnv(t *testing.T) (*env, string) {
	t.Helper()
	e := newEnv(t, gitIdent...)
	repo := t.TempDir()
	gitSh(t, repo, gitIdent, "git init -q -b main && echo '# demo' > README.md && git add -A && git commit -qm init && echo .orcr >> .git/info/exclude")
	return e, repo
}

func gitSh(t *testing.T, dir string, env []string, script string) string {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, out)
	}
	return strings.TrimSpace(string(out))
}

// runDump is what a failure message shows of run name: status, log, its agents and
// their screens.
func runDump(e *env, name string) string {
	var b strings.Builder
	b.WriteString(e.orcr("run", "status", name).Out + "\n" + e.orcr("run", "events", name).Out + "\n")
	b.WriteString(e.orcr("agent", "ls", "runs/"+name+"/**").Out)
	var ls wire.ListResult
	if json.Unmarshal([]byte(e.orcr("agent", "ls", "runs/"+name+"/**", "--json").Out), &ls) == nil {
		for _, a := range ls.Agents {
			fmt.Fprintf(&b, "--- %s %s %s (%s: %s) at %s\n%s\n", a.Path, a.ID, a.State, a.StateSource, a.StateReason,
				a.StateAt.Format("15:04:05.000"), strings.TrimSpace(e.orcr("agent", "read", a.ID).Out))
		}
	}
	return b.String()
}
