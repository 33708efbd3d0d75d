package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	planapi "orcr/orchestrate/api"
	runapi "orcr/orchestrate/run/api"
	"orcr/testutil/modelserver"
	"orcr/testutil/rig"
	"orcr/testutil/wait"
)

// selfPlan is a plan a session writes itself before `orcr plan new csv --lead self`.
const selfPlan = `# Plan: csv
request: import CSV files
check: true
mode: worktree

## M1 · Parser
depends: -
tier: small
needs: go
model-why: small
estimate: 10m

### Goal
Parse CSV.

### Acceptance
- [ ] it parses
`

func gitRepo(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "git init -q -b main && git -c user.email=t@t -c user.name=t commit -q --allow-empty -m init")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git: %v %s", err, out)
	}
}

// TestLeadSelf: an agent orcr runs writes a plan and calls `orcr plan new --lead
// self` from its pane: it is the plan's lead (plan ls shows it), approving the plan
// does not stop it, and the run started from the plan makes it the run's lead — it is
// sent the lead's prompt as a lead orcr started gets it, and never stopped. From
// outside any pane --lead self is refused with the fix.
func TestLeadSelf(t *testing.T) {
	r := rig.New(t)
	r.Serve()
	gitRepo(t, r.Work)
	res := r.Run("plan", "new", "nope", "import", "--lead", "self", "--repo", r.Work)
	if res.Code == 0 || !strings.Contains(res.Err, "no orcr agent's pane") || !strings.Contains(res.Err, "orcr agent run me --provider claude") {
		t.Fatalf("--lead self outside a pane: exit %d %q", res.Code, res.Err)
	}
	file := filepath.Join(r.Work, ".orcr", "plans", "csv.md")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(selfPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	// The session: it makes the plan, then reads what is typed to it (cat echoes it).
	r.Must("agent", "run", "me", "--keep", "--cwd", r.Work, "--", "sh", "-c",
		"orcr plan new csv 'import CSV files' --lead self --repo "+r.Work+"; echo PLAN-EXIT=$?; exec cat")
	screen := func() string { return r.Run("agent", "read", "me").Out }
	if !wait.Until(20*time.Second, func() bool { return strings.Contains(screen(), "PLAN-EXIT=") }) {
		t.Fatalf("plan new never ended:\n%s", screen())
	}
	if s := screen(); !strings.Contains(s, "PLAN-EXIT=0") || !strings.Contains(s, "you (me) lead it") {
		t.Fatalf("plan new from the pane:\n%s", s)
	}
	me := r.Agent("me")
	var pl planapi.PlanResult
	if err := json.Unmarshal([]byte(r.Must("plan", "show", "csv", "--json")), &pl); err != nil {
		t.Fatal(err)
	}
	if pl.Plan.Lead != "self" || pl.Plan.LeadID != me.ID || pl.Plan.LeadPath != "me" || pl.Plan.State != planapi.StateDrafted {
		t.Fatalf("plan %+v", pl.Plan)
	}
	if ls := r.Must("plan", "ls"); !strings.Contains(ls, "lead self: me") {
		t.Fatalf("plan ls:\n%s", ls)
	}
	r.Must("plan", "approve", "csv")
	// The run takes the plan's lead: this session.
	r.Must("run", "start", "csv")
	// The prompt is one long line the pane wraps at its width, at a place that moves
	// with the length of the test's temporary paths: read it unwrapped.
	unwrapped := func() string { return strings.ReplaceAll(screen(), "\n", "") }
	if !wait.Until(30*time.Second, func() bool { return strings.Contains(unwrapped(), "You are the lead of orcr run csv") }) {
		t.Fatalf("the session was not given the lead's prompt:\n%s", screen())
	}
	// With the run's events waiting for its lead, as a started lead's prompt has them.
	if s := unwrapped(); !strings.Contains(s, "Now: M1 ready: dispatch with") {
		t.Fatalf("the lead's prompt lacks the run's events:\n%s", s)
	}
	var st runapi.RunResult
	if err := json.Unmarshal([]byte(r.Must("run", "status", "csv", "--json")), &st); err != nil || st.Run.State != "running" {
		t.Fatalf("run status %+v %v", st.Run, err)
	}
	if a := r.Agent("me"); !a.State.Live() || a.ID != me.ID {
		t.Fatalf("the session was stopped or replaced: %s %s", a.ID, a.State)
	}
	// Stopping the run does not stop its self lead.
	r.Must("run", "stop", "csv")
	if a := r.Agent("me"); !a.State.Live() {
		t.Fatalf("run stop ended the session: %s", a.State)
	}
}

// TestResumedSelfLeadIsFollowed: the user's own claude session leads a run by --lead
// self; it ends, and `orcr agent resume me` brings it back as a new agent with a new
// id. The run follows it: the resumed session is told it is the lead again, and the
// run's next event batch (M1 merged, after the user dispatched it) is typed into the
// new session — not into the dead id.
func TestResumedSelfLeadIsFollowed(t *testing.T) {
	r := rig.New(t, "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	r.Claude()
	r.Serve()
	gitRepo(t, r.Work)
	file := filepath.Join(r.Work, ".orcr", "plans", "csv.md")
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(selfPlan), 0o644); err != nil {
		t.Fatal(err)
	}
	bash := func(cmd string) modelserver.Turn {
		return modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "Bash", Input: map[string]any{"command": cmd, "description": "orcr"}}}}
	}
	on := func(text string, t modelserver.Turn) modelserver.Turn {
		t.Match = func(q modelserver.Request) bool { return strings.Contains(q.LastUser(), text) }
		return t
	}
	r.Models.Push(
		bash(r.Bin+" plan new csv 'import CSV files' --lead self --repo "+r.Work),
		modelserver.Turn{Text: "Plan csv is drafted."},
		on("You are the lead of orcr run csv,", modelserver.Turn{Text: "I wait for the run's messages."}),
		// After the resume: the run tells the new session it leads again. (A resumed
		// claude has its session, not its flags: no Bash allowed unasked, so the user
		// dispatches.)
		on("You are the lead of orcr run csv again", modelserver.Turn{Text: "I lead again."}),
		on("M1 is merged into feature/csv", modelserver.Turn{Text: "Noted the merge."}),
	)
	r.Must("agent", "run", "me", "--provider", "claude", "--cwd", r.Work, "--prompt", "plan the CSV import",
		"--", "--permission-mode", "acceptEdits", "--allowedTools", "Bash("+r.Bin+":*)", "--")
	me := r.WaitAgent("me", 150*time.Second, "the plan's turn to end", func(a wire.Agent) bool {
		return a.State == wire.StateDone && a.LastMessage == "Plan csv is drafted."
	})
	r.Must("plan", "approve", "csv")
	coder := `echo parsed > parser.txt && git add -A && git -c user.email=t@t -c user.name=t commit -qm "M1: parser" && ` + r.Bin + ` run done M1; exec cat`
	r.Must("run", "start", "csv", "--coders", "1", "--coder", "shell", "--", "sh", "-c", coder)
	r.WaitAgent("me", 90*time.Second, "the lead's prompt to be taken in", func(a wire.Agent) bool {
		return a.State == wire.StateDone && a.LastMessage == "I wait for the run's messages."
	})

	// The session ends; the user resumes it: a new agent, a new id, the same path, and
	// the run's messages go to it.
	r.Must("agent", "kill", "me", "--yes")
	r.WaitAgent(me.ID, 30*time.Second, "the session to end", func(a wire.Agent) bool { return a.State.Terminal() })
	r.Must("agent", "resume", "me")
	r.WaitAgent("me", 150*time.Second, "the resumed session to be told it leads", func(a wire.Agent) bool {
		return a.State == wire.StateDone && a.LastMessage == "I lead again."
	})
	r.Must("run", "dispatch", "csv", "M1")
	back := r.WaitAgent("me", 150*time.Second, "the resumed session to take in the merge", func(a wire.Agent) bool {
		return a.State == wire.StateDone && a.LastMessage == "Noted the merge."
	})
	if back.ID == me.ID || back.ResumedFrom != me.ID {
		t.Fatalf("the session was not resumed as a new agent: %s from %q (was %s)", back.ID, back.ResumedFrom, me.ID)
	}
	// The resumed claude runs with the flags the session was started with (its
	// --allowedTools), as a woken one does: read from the process itself.
	if cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", back.PID)); err != nil || !strings.Contains(string(cmd), "--allowedTools\x00Bash(") || !strings.Contains(string(cmd), "--resume") {
		t.Fatalf("the resumed claude's command line lacks its start flags (%v): %q", err, cmd)
	}
	var st runapi.RunResult
	if err := json.Unmarshal([]byte(r.Must("run", "status", "csv", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if m := st.Run.Milestones; len(m) != 1 || m[0].State != "merged" {
		t.Fatalf("milestones %+v", m)
	}
	merged := false
	for _, q := range r.Models.Requests() {
		merged = merged || strings.HasPrefix(q.LastUser(), "orcr run csv: ") && strings.Contains(q.LastUser(), "M1 is merged")
	}
	if !merged {
		t.Fatalf("the run's batch never reached the resumed session")
	}
	// The plan follows its self lead too: it names the resumed session.
	var pl planapi.PlanResult
	if err := json.Unmarshal([]byte(r.Must("plan", "show", "csv", "--json")), &pl); err != nil || pl.Plan.LeadID != back.ID || pl.Plan.LeadPath != "me" {
		t.Fatalf("the plan's lead is %s (%s), not the resumed %s: %v", pl.Plan.LeadID, pl.Plan.LeadPath, back.ID, err)
	}
}
