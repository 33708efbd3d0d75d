package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"orcr/core/wire"

	planapi "orcr/orchestrate/api"
	"orcr/testutil/clis"
	"orcr/testutil/modelserver"
	"orcr/testutil/wait"
)

// planV1 is the lead's first draft: one milestone.
const planV1 = `# Plan: csv
request: import CSV files into the contacts table
check: go test ./...

## M1 · Importer
depends: -
tier: medium
needs: go
model-why: ordinary feature work
estimate: 40m

### Goal
CSV files import into the contacts table.

### Acceptance
- [ ] ` + "`go test ./import/...`" + ` passes
`

// planBroken is the redraft after the rejection, with two mistakes the parser names
// by line: an unknown tier (line 7) and an unknown key (line 8).
const planBroken = `# Plan: csv
request: import CSV files into the contacts table
check: go test ./...

## M1 · Row type and sink interface
depends: -
tier: huge
owner: ana

### Goal
One type for a row, one interface for a sink.

### Acceptance
- [ ] the package builds
`

// planV2 is the fixed redraft: the split the user asked for.
const planV2 = `# Plan: csv
request: import CSV files into the contacts table
check: go test ./...

## M1 · Row type and sink interface
depends: -
tier: high
model-why: the contract M2 and M3 build on
estimate: 20m

### Goal
One type for a row, one interface for a sink.

### Acceptance
- [ ] the package builds

## M2 · CSV parser
depends: M1
tier: medium
estimate: 30m

### Goal
CSV rows parse into the row type.

### Acceptance
- [ ] parser tests pass

## M3 · Contacts sink
depends: M1
tier: medium
estimate: 30m

### Goal
Rows land in the contacts table.

### Acceptance
- [ ] sink tests pass
`

// TestPlanWithRealClaude runs a plan end to end through the real binary with the real
// claude CLI as the lead, driven by the scripted model server: the lead's Write tool
// calls really write the plan file; a rejection's reason and a broken draft's errors
// (by line) must reach the model's next request; approval records the file's hash; an
// edit after approval is a plan.edited event; a kill -9 loses nothing.
func TestPlanWithRealClaude(t *testing.T) {
	e, srv, _, repo := claudeLeadEnv(t)
	e.serveWithLeads()
	events := collectPlanEvents(t, e)

	file := filepath.Join(repo, ".orcr", "plans", "csv.md")
	write := func(content string) modelserver.Turn {
		return modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "Write", Input: map[string]any{"file_path": file, "content": content}}},
			Usage: modelserver.Usage{Input: 100, Output: 20}}
	}
	read := modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "Read", Input: map[string]any{"file_path": file}}},
		Usage: modelserver.Usage{Input: 50, Output: 5}}
	said := func(s string) modelserver.Turn {
		return modelserver.Turn{Text: s, Usage: modelserver.Usage{Input: 10, Output: 5}}
	}

	// 1. The first draft: a Write the CLI really runs, then the turn ends → drafted.
	srv.Push(write(planV1), said("The plan is written."))
	out := e.must("plan", "new", "csv", "import CSV files into the contacts table", "--repo", repo, "--lead", "claude:claude-opus-5")
	if !strings.Contains(out, "plans/csv/lead") {
		t.Fatalf("plan new said %q", out)
	}
	ls := e.must("plan", "ls")
	if !strings.Contains(ls, "csv") || !strings.Contains(ls, "lead claude:claude-opus-5") {
		t.Fatalf("plan ls:\n%s", ls)
	}
	if !strings.Contains(e.must("agent", "ls", "plans/**"), "plans/csv/lead") {
		t.Fatal("the lead is not an agent at plans/csv/lead")
	}
	p := waitPlan(t, e, 150*time.Second, "first draft", func(r planapi.PlanGetResult) bool { return r.Plan.State == "drafted" })
	if len(p.Milestones) != 1 || p.Milestones[0].Title != "Importer" {
		t.Fatalf("milestones %+v", p.Milestones)
	}
	if b, _ := os.ReadFile(file); string(b) != planV1 {
		t.Fatalf("the CLI did not write the plan: %q", b)
	}
	lead := e.must("agent", "get", "plans/csv/lead")
	if !strings.Contains(lead, "acceptEdits") {
		t.Fatalf("the lead does not run with acceptEdits:\n%s", lead)
	}

	// 2. Reject with a reason: it reaches the model; the redraft is broken, its
	// errors go back by line and the second draft of the round parses.
	reason := "split M2: parser and sink are independent"
	srv.Push(read, write(planBroken), said("Redrafted."), read, write(planV2), said("Fixed."))
	before := len(srv.Requests())
	e.must("plan", "reject", "csv", reason)
	p = waitPlan(t, e, 200*time.Second, "the fixed redraft", func(r planapi.PlanGetResult) bool {
		return r.Plan.State == "drafted" && len(r.Milestones) == 3
	})
	reqs := modelserver.Conversation(srv.Requests()[before:])
	if len(reqs) < 6 {
		t.Fatalf("%d conversation requests after the rejection", len(reqs))
	}
	if !strings.Contains(reqs[0].LastUser(), reason) {
		t.Fatalf("the reason is not in the model's next request:\n%s", reqs[0].LastUser())
	}
	// reqs[3] is the request after the broken draft's turn ended: the fix message.
	fix := reqs[3].LastUser()
	for _, want := range []string{"csv.md:7: unknown tier", "csv.md:8: unknown key \"owner\""} {
		if !strings.Contains(fix, want) {
			t.Fatalf("the errors (%q) are not in the model's next request:\n%s", want, fix)
		}
	}
	if p.Plan.Rounds != 2 || p.Plan.FixRounds != 0 || len(p.Problems) != 0 {
		t.Fatalf("after the fix: rounds %d fix rounds %d problems %v", p.Plan.Rounds, p.Plan.FixRounds, p.Problems)
	}
	show := e.must("plan", "show", "csv")
	for _, want := range []string{"M1", "Row type and sink interface", "M2", "CSV parser", "M1", "high", "20m", "the contract M2 and M3 build on", "3 milestones, 1h20m"} {
		if !strings.Contains(show, want) {
			t.Fatalf("plan show lacks %q:\n%s", want, show)
		}
	}

	// 3. Approve: the hash of the file is recorded.
	var approved planapi.PlanResult
	if err := json.Unmarshal([]byte(e.must("plan", "approve", "csv", "--json")), &approved); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(file)
	sum := sha256.Sum256(b)
	if approved.Plan.State != "approved" || approved.Plan.ApprovedHash != hex.EncodeToString(sum[:]) {
		t.Fatalf("approved %+v, file sha256 %x", approved.Plan, sum)
	}
	// The lead's work ended with the approval: its agent ends too (no idle claude
	// outlives its plan).
	wait.For(t, 30*time.Second, "the plan's lead to end after approval", func() bool {
		var a wire.AgentResult
		json.Unmarshal([]byte(e.must("agent", "get", "plans/csv/lead", "--json")), &a)
		return a.Agent.State.Terminal()
	})
	if r := e.orcr("plan", "reject", "csv", "too late"); r.Code != 1 || !strings.Contains(r.Err, "approved") {
		t.Fatalf("reject after approve: %d %s", r.Code, r.Err)
	}

	// 4. An edit after approval (through `orcr plan edit` with a scripted editor) is
	// an event; the approved hash stays.
	r := e.orcrEnv([]string{"EDITOR=sed -i s/estimate:\\ 20m/estimate:\\ 25m/"}, "plan", "edit", "csv")
	if r.Code != 0 || !strings.Contains(r.Out, "changed after approval") {
		t.Fatalf("plan edit: %d\n%s\n%s", r.Code, r.Out, r.Err)
	}
	wait.For(t, 10*time.Second, "plan.edited event", func() bool { return events.has(planapi.EventPlanEdited) })
	p = getPlan(t, e)
	if p.Plan.ApprovedHash != approved.Plan.ApprovedHash || p.Plan.FileHash == p.Plan.ApprovedHash || p.Milestones[0].EstimateSeconds != 25*60 {
		t.Fatalf("after the edit: %+v", p.Plan)
	}
	for _, want := range []string{"drafted", "rejected", "drafting", "approved"} {
		if !events.hasState(want) {
			t.Errorf("no plan.state event to %s (events: %v)", want, events.list())
		}
	}

	// 5. The file made unreadable (a directory in its place) while approved: the plan
	// says so; a crash and restart keep everything.
	os.Rename(file, file+".bak")
	os.Mkdir(file, 0o755)
	p = getPlan(t, e)
	if len(p.Problems) != 1 || p.Problems[0].Code != "unreadable" || p.Plan.State != "approved" {
		t.Fatalf("unreadable file: %+v", p.Problems)
	}
	os.Remove(file)
	os.Rename(file+".bak", file)
	e.leadPIDs = append(e.leadPIDs, agentPID(t, e, "plans/csv/lead"))
	e.kill9()
	e.serve()
	p = getPlan(t, e)
	if p.Plan.State != "approved" || p.Plan.ApprovedHash != approved.Plan.ApprovedHash || len(p.Milestones) != 3 {
		t.Fatalf("after a restart: %+v", p.Plan)
	}
}

// TestPlanRestartWhileDrafting: the server dies (kill -9) while the lead is still in
// its turn; on restart the plan is re-derived from the store and the lead's state (on
// the embedded host the lead died with the server, so its turn is over) and the file
// the lead wrote makes it drafted. Deleting the file then is reported, not a crash.
func TestPlanRestartWhileDrafting(t *testing.T) {
	e, srv, _, repo := claudeLeadEnv(t)
	os.MkdirAll(filepath.Join(repo, "sub"), 0o755)
	e.serve()
	t.Cleanup(func() { stopLeads(t, e) })
	srv.Push(modelserver.Turn{Text: "still thinking", Delay: time.Minute})
	// --repo names a folder inside the repository: the plan lives at its top.
	e.must("plan", "new", "csv", "import CSV files into the contacts table", "--repo", filepath.Join(repo, "sub"), "--lead", "claude")
	file := filepath.Join(repo, ".orcr", "plans", "csv.md")
	wait.For(t, 60*time.Second, "the lead's turn to start", func() bool {
		var a wire.AgentResult
		json.Unmarshal([]byte(e.must("agent", "get", "plans/csv/lead", "--json")), &a)
		return a.Agent.State == wire.StateWorking
	})
	// The lead's request is in (the scripted turn taken, its answer held back).
	wait.For(t, 60*time.Second, "the lead's request", func() bool { return srv.Played() == 1 })
	os.MkdirAll(filepath.Dir(file), 0o755)
	os.WriteFile(file, []byte(planV1), 0o644)
	if p := getPlan(t, e); p.Plan.State != "drafting" || p.Plan.Lead != "claude:claude-opus-5" {
		t.Fatalf("before the crash: %s on %s", p.Plan.State, p.Plan.Lead)
	}
	e.leadPIDs = append(e.leadPIDs, agentPID(t, e, "plans/csv/lead"))
	e.kill9()
	e.serve()
	p := waitPlan(t, e, 30*time.Second, "drafted after the restart", func(r planapi.PlanGetResult) bool { return r.Plan.State == "drafted" })
	if len(p.Milestones) != 1 || p.Plan.File != file {
		t.Fatalf("after the restart: %+v", p)
	}
	os.Remove(file)
	p = getPlan(t, e)
	if !p.Missing || p.Plan.State != "drafted" || len(p.Problems) != 1 || p.Problems[0].Code != "unreadable" {
		t.Fatalf("deleted file: missing %v state %s problems %+v", p.Missing, p.Plan.State, p.Problems)
	}
	if r := e.orcr("plan", "approve", "csv"); r.Code != 1 || !strings.Contains(r.Err, "does not exist") {
		t.Fatalf("approve without a file: %d %s", r.Code, r.Err)
	}
	if !strings.Contains(e.must("plan", "ls"), "drafted") {
		t.Fatal("plan ls after the file was deleted")
	}

	// The file back, then a rejection: the lead ended with the old server, so a new
	// lead starts at the same path with the prompt, the earlier draft and the reason.
	os.WriteFile(file, []byte(planV1), 0o644)
	waitPlan(t, e, 10*time.Second, "the file back", func(r planapi.PlanGetResult) bool { return !r.Missing && len(r.Problems) == 0 })
	old := getPlan(t, e).Plan.LeadID
	reason := "split M2: parser and sink are independent"
	// (The old lead's request is logged when its held answer ends, so requests are
	// told apart by when they arrived.)
	rejectedAt := time.Now()
	srv.Push(modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "Read", Input: map[string]any{"file_path": file}}}},
		modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "Write", Input: map[string]any{"file_path": file, "content": planV2}}}},
		modelserver.Turn{Text: "Redrafted."})
	e.must("plan", "reject", "csv", reason)
	p = waitPlan(t, e, 120*time.Second, "the new lead's draft", func(r planapi.PlanGetResult) bool {
		return r.Plan.State == "drafted" && len(r.Milestones) == 3
	})
	if p.Plan.LeadID == old || p.Plan.LeadPath != "plans/csv/lead" {
		t.Fatalf("the lead was not started again: %s (was %s) at %s", p.Plan.LeadID, old, p.Plan.LeadPath)
	}
	var reqs []modelserver.Request
	for _, r := range modelserver.Conversation(srv.Requests()) {
		if r.At.After(rejectedAt) {
			reqs = append(reqs, r)
		}
	}
	if len(reqs) == 0 {
		t.Fatal("the new lead asked the model nothing")
	}
	first := reqs[0].LastUser()
	if !strings.Contains(first, reason) || !strings.Contains(first, "A draft of this plan is in "+file) || !strings.Contains(first, `You are the lead of plan "csv"`) {
		t.Fatalf("the new lead's first request lacks the prompt, the draft or the reason:\n...%s", first[max(0, len(first)-600):])
	}
}

// TestPlanBadInput: plan new outside a repository, with a taken name, with a lead
// whose program is missing (exit 2 and the install command).
func TestPlanBadInput(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t)
	// codex configured at a path where it is not: the lead's program is missing.
	for _, kv := range e.vars {
		if cfg, ok := strings.CutPrefix(kv, "XDG_CONFIG_HOME="); ok {
			os.MkdirAll(filepath.Join(cfg, "orcr"), 0o700)
			os.WriteFile(filepath.Join(cfg, "orcr", "config.toml"), []byte("[providers.codex]\nbin = \""+filepath.Join(dir, "no-codex")+"\"\n"), 0o600)
		}
	}
	e.serve()
	plain := filepath.Join(dir, "plain")
	os.MkdirAll(plain, 0o755)
	r := e.orcr("plan", "new", "x", "do it", "--repo", plain)
	if r.Code != 1 || !strings.Contains(r.Err, "is not inside a git repository") || !strings.Contains(r.Err, "git init") {
		t.Fatalf("outside a repo: %d %s", r.Code, r.Err)
	}
	repo := filepath.Join(dir, "repo")
	os.MkdirAll(repo, 0o755)
	exec.Command("git", "-C", repo, "init", "-q").Run()
	r = e.orcr("plan", "new", "x", "do it", "--repo", repo, "--lead", "codex")
	if r.Code != 2 || !strings.Contains(r.Err, "npm install -g @openai/codex") {
		t.Fatalf("missing lead provider: %d %s", r.Code, r.Err)
	}
	r = e.orcr("plan", "new", "x", "do it", "--repo", repo, "--lead", "nobody")
	if r.Code != 1 || !strings.Contains(r.Err, "provider \"nobody\"") {
		t.Fatalf("unknown lead provider: %d %s", r.Code, r.Err)
	}
	r = e.orcr("plan", "show", "nope")
	if r.Code != 1 || !strings.Contains(r.Err, "no plan named nope") {
		t.Fatalf("unknown plan: %d %s", r.Code, r.Err)
	}
	var res map[string]any
	r = e.orcr("catalog", "--json")
	if r.Code != 0 || json.Unmarshal([]byte(r.Out), &res) != nil || res["table"] == nil {
		t.Fatalf("catalog --json: %d %s", r.Code, r.Err)
	}
}

func agentPID(t *testing.T, e *env, target string) int {
	var a wire.AgentResult
	json.Unmarshal([]byte(e.must("agent", "get", target, "--json")), &a)
	return a.Agent.PID
}

// stopLeads ends every lead process the test's servers started and waits until they
// are gone, so none still writes into the test's folders while they are removed.
func stopLeads(t *testing.T, e *env) { stopAgentProcs(t, e, "plans/**") }

// claudeLeadEnv is an orcr installation (not yet serving) whose leads are the real
// claude against a new scripted model server, with an empty git repository dir/app
// (symlinks resolved) to plan in.
func claudeLeadEnv(t *testing.T) (e *env, srv *modelserver.Server, dir, repo string) {
	t.Helper()
	srv, err := modelserver.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	dir = t.TempDir()
	claude := clis.ScriptedClaude(t, dir, srv.URL)
	repo = filepath.Join(dir, "app")
	os.MkdirAll(repo, 0o755)
	repo, _ = filepath.EvalSymlinks(repo)
	if out, err := exec.Command("git", "-C", repo, "init", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git init: %v %s", err, out)
	}
	return newEnv(t, claude...), srv, dir, repo
}

// serveWithLeads serves e and, when the test ends, stops the leads' processes while
// the server still answers (stopLeads asks it for them).
func (e *env) serveWithLeads() {
	e.t.Helper()
	e.serve()
	e.t.Cleanup(func() { stopLeads(e.t, e) })
}

// stopAgentProcs ends the processes of the agents matching globs (each pane's program
// and what it started) and those e.leadPIDs names, and waits until they are gone.
func stopAgentProcs(t *testing.T, e *env, globs ...string) {
	var pids []int
	if e.srv != nil {
		for _, g := range globs {
			var res wire.ListResult
			json.Unmarshal([]byte(e.orcr("agent", "ls", g, "--all", "--json").Out), &res)
			for _, a := range res.Agents {
				if a.PID > 0 {
					pids = append(pids, a.PID)
				}
			}
		}
	}
	pids = append(pids, e.leadPIDs...)
	pids = append(pids, descendants(pids)...)
	for _, pid := range pids {
		syscall.Kill(pid, syscall.SIGKILL)
	}
	wait.For(t, 15*time.Second, "the agents' processes to exit", func() bool {
		for _, pid := range pids {
			if st := procStat(pid); st != nil && st[0] != "Z" {
				return false
			}
		}
		return true
	})
}

// descendants are the processes below pids, from /proc.
func descendants(pids []int) []int {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, d := range ents {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		if st := procStat(pid); len(st) > 1 {
			ppid, _ := strconv.Atoi(st[1])
			children[ppid] = append(children[ppid], pid)
		}
	}
	var out []int
	todo := append([]int(nil), pids...)
	for len(todo) > 0 {
		p := todo[0]
		todo = todo[1:]
		out = append(out, children[p]...)
		todo = append(todo, children[p]...)
	}
	return out
}

func getPlan(t *testing.T, e *env) planapi.PlanGetResult {
	t.Helper()
	var r planapi.PlanGetResult
	if err := json.Unmarshal([]byte(e.must("plan", "show", "csv", "--json")), &r); err != nil {
		t.Fatal(err)
	}
	return r
}

func waitPlan(t *testing.T, e *env, d time.Duration, what string, cond func(planapi.PlanGetResult) bool) planapi.PlanGetResult {
	t.Helper()
	var last planapi.PlanGetResult
	if !wait.Until(d, func() bool { last = getPlan(t, e); return cond(last) }) {
		screen := e.orcr("agent", "read", "plans/csv/lead").Out
		t.Fatalf("timed out after %s waiting for %s: state %s errors %v events %+v\nlead screen:\n%s", wait.Scale(d), what, last.Plan.State, last.Plan.Errors, last.Plan.Events, screen)
	}
	return last
}

// planEvents collects the plan (or other) events the server publishes.
type planEvents struct {
	mu  sync.Mutex
	evs []wire.Event
}

func collectPlanEvents(t *testing.T, e *env) *planEvents { return collectEvents(t, e, "plan.") }

// collectEvents collects the events the server publishes whose name starts with
// prefix.
func collectEvents(t *testing.T, e *env, prefix string) *planEvents {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch, err := e.client().Subscribe(ctx, wire.SubscribeParams{})
	if err != nil {
		t.Fatal(err)
	}
	pe := &planEvents{}
	go func() {
		for ev := range ch {
			if strings.HasPrefix(ev.Event, prefix) {
				pe.mu.Lock()
				pe.evs = append(pe.evs, ev)
				pe.mu.Unlock()
			}
		}
	}()
	return pe
}

func (pe *planEvents) has(kind string) bool {
	pe.mu.Lock()
	defer pe.mu.Unlock()
	for _, ev := range pe.evs {
		if ev.Event == kind {
			return true
		}
	}
	return false
}

func (pe *planEvents) hasState(state string) bool {
	pe.mu.Lock()
	defer pe.mu.Unlock()
	for _, ev := range pe.evs {
		if ev.Event == planapi.EventPlanState && ev.Data["state"] == state {
			return true
		}
	}
	return false
}

// texts are the events' "text" data (run.notify's message).
func (pe *planEvents) texts() []string {
	pe.mu.Lock()
	defer pe.mu.Unlock()
	var out []string
	for _, ev := range pe.evs {
		if s, ok := ev.Data["text"].(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func (pe *planEvents) list() []string {
	pe.mu.Lock()
	defer pe.mu.Unlock()
	var out []string
	for _, ev := range pe.evs {
		out = append(out, fmt.Sprintf("%s:%v", ev.Event, ev.Data["state"]))
	}
	return out
}

// TestPlanWrittenByHand: `plan new --lead none` records a plan the user wrote
// (drafted at once, no lead agent); a missing or broken file is refused with the
// reason; reject is refused (no lead to redraft); approve works.
func TestPlanWrittenByHand(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t)
	e.serve()
	repo := filepath.Join(dir, "repo")
	os.MkdirAll(filepath.Join(repo, ".orcr", "plans"), 0o755)
	exec.Command("git", "-C", repo, "init", "-q").Run()
	r := e.orcr("plan", "new", "hand", "do it", "--repo", repo, "--lead", "none")
	if r.Code != 1 || !strings.Contains(r.Err, "write "+filepath.Join(repo, ".orcr", "plans", "hand.md")+" first") {
		t.Fatalf("missing file: %d %s", r.Code, r.Err)
	}
	file := filepath.Join(repo, ".orcr", "plans", "hand.md")
	os.WriteFile(file, []byte("# Plan: hand\nrequest: r\ncheck: true\n\n## M1 · One\ndepends: M9\ntier: small\n\n### Goal\nx\n"), 0o644)
	r = e.orcr("plan", "new", "hand", "do it", "--repo", repo, "--lead", "none")
	if r.Code != 1 || !strings.Contains(r.Err, "hand.md:6: milestone M1 depends on M9") {
		t.Fatalf("broken file: %d %s", r.Code, r.Err)
	}
	os.WriteFile(file, []byte("# Plan: hand\nrequest: r\ncheck: true\n\n## M1 · One\ndepends: -\ntier: small\n\n### Goal\nx\n\n### Acceptance\n- [ ] y\n"), 0o644)
	out := e.must("plan", "new", "hand", "do it", "--repo", repo, "--lead", "none")
	if !strings.Contains(out, "plan hand: drafted") || !strings.Contains(out, "orcr plan approve hand") {
		t.Fatalf("plan new --lead none: %s", out)
	}
	if ls := e.must("agent", "ls", "plans/**"); strings.Contains(ls, "plans/hand") {
		t.Fatalf("a lead started:\n%s", ls)
	}
	r = e.orcr("plan", "reject", "hand", "redo it")
	if r.Code != 1 || !strings.Contains(r.Err, "no lead to redraft") {
		t.Fatalf("reject: %d %s", r.Code, r.Err)
	}
	if out := e.must("plan", "approve", "hand"); !strings.Contains(out, "plan hand approved") {
		t.Fatalf("approve: %s", out)
	}
}
