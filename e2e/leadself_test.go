package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	planapi "orcr/orchestrate/api"
	runapi "orcr/orchestrate/run/api"
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
	if !wait.Until(30*time.Second, func() bool { return strings.Contains(screen(), "You are the lead of orcr run csv") }) {
		t.Fatalf("the session was not given the lead's prompt:\n%s", screen())
	}
	// With the run's events waiting for its lead, as a started lead's prompt has them.
	if s := screen(); !strings.Contains(s, "Now: M1 ready: dispatch with") {
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
