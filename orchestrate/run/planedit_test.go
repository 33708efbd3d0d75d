package run_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/orchestrate"
	runapi "orcr/orchestrate/run/api"
	"orcr/testutil/wait"
)

// TestPlanEditedMidRun edits the plan file of a running run: a broken edit (a cycle)
// is refused with the line it is on and the run keeps its plan; a good edit adds a
// milestone that depends on one under way and drops one not started. Each is an
// event in the log, what the lead hears (here, with no lead, a run.notify for the
// user) and a line of `run status`, and the run completes on the edited plan.
func TestPlanEditedMidRun(t *testing.T) {
	g := newRig(t)
	ctx := context.Background()
	const plan = `# Plan: edit
request: r
check: true

## M1 · First
depends: -
tier: small

### Goal
One.

### Acceptance
- [ ] one

## M2 · Second
depends: M1
tier: small

### Goal
Two.

### Acceptance
- [ ] two
`
	g.approve("edit", plan)
	// The coders wait for a line before they work, so the edits land mid-run.
	coder := []string{"sh", "-c", `m=$(basename "$PWD"); while read -r l; do [ "$l" = go ] && break; done; echo "$m" > "$m.txt" && git add -A && git commit -qm "$m" && ` + g.orcr + ` run done "$m"; exec cat`}
	if _, err := g.svc.RunStart(ctx, runapi.RunStartParams{Name: "edit", Coders: 2, Coder: "shell", CoderArgv: coder, Lead: "none"}); err != nil {
		t.Fatal(err)
	}
	if _, err := g.svc.RunDispatch(ctx, runapi.RunMilestonesParams{Name: "edit", Milestones: []string{"M1"}}); err != nil {
		t.Fatal(err)
	}
	g.waitState("edit", "M1", "building", 10*time.Second)
	file := orchestrate.PlanFile(g.repo, "edit")
	// With no lead the user is the lead: what it would hear comes as run.notify.
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	evs, err := g.svc.Subscribe(sctx, wire.SubscribeParams{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var told []string
	go func() {
		for ev := range evs {
			if ev.Event == runapi.EventRunNotify {
				mu.Lock()
				told = append(told, fmt.Sprint(ev.Data["text"]))
				mu.Unlock()
			}
		}
	}()

	// A cycle: refused, naming the line; the plan stays as it was.
	cyclic := strings.Replace(plan, "## M1 · First\ndepends: -", "## M1 · First\ndepends: M2", 1)
	if err := os.WriteFile(file, []byte(cyclic), 0o644); err != nil {
		t.Fatal(err)
	}
	v := g.status("edit")
	if !strings.Contains(v.PlanEdit, "edit refused") || !strings.Contains(v.PlanEdit, "edit.md:6") || !strings.Contains(v.PlanEdit, "cycle") {
		t.Fatalf("status after a cyclic edit: plan edit %q", v.PlanEdit)
	}
	if v.Milestones[0].State != "building" || v.Milestones[1].State != "planned" {
		t.Fatalf("a refused edit changed the run: %+v", v.Milestones)
	}

	// A good edit: M3 is new and depends on M1; M2 (not started) is removed; the
	// check changes (taken from here on) and so does the mode (not taken).
	marker := filepath.Join(t.TempDir(), "edited-check-ran")
	edited := strings.Replace(plan, "## M2 · Second\ndepends: M1", "## M3 · Third\ndepends: M1", 1)
	edited = strings.Replace(edited, "check: true\n", "check: touch "+marker+"\nmode: shared\n", 1)
	if err := os.WriteFile(file, []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	// The poll finds it without anyone asking (here: well within its 2 s).
	var es []runapi.RunEntry
	wait.For(t, 10*time.Second, "the poll to take in the edit", func() bool {
		es, _ = g.svc.RunEvents(ctx, runapi.RunEventsParams{Name: "edit"})
		n := 0
		for _, e := range es {
			if e.Kind == "plan-edited" {
				n++
			}
		}
		return n == 2
	})
	var texts []string
	for _, e := range es {
		if e.Kind == "plan-edited" {
			texts = append(texts, e.Text)
		}
	}
	if !strings.Contains(texts[0], "refused") || !strings.Contains(texts[1], "M2 removed before it started: dropped") || !strings.Contains(texts[1], "M3 added") ||
		!strings.Contains(texts[1], "the check is now `touch "+marker+"`") || !strings.Contains(texts[1], "mode shared not taken") {
		t.Fatalf("plan-edited events: %q", texts)
	}
	v = g.status("edit")
	if v.Check != "touch "+marker || v.Mode != "worktree" {
		t.Fatalf("after the edit: check %q mode %q", v.Check, v.Mode)
	}
	if len(v.Milestones) != 2 || v.Milestones[1].ID != "M3" || v.Milestones[1].State != "planned" || !strings.Contains(v.Milestones[1].Waits, "M1") {
		t.Fatalf("milestones after the edit: %+v", v.Milestones)
	}
	wait.For(t, 5*time.Second, "the user told of both edits", func() bool {
		mu.Lock()
		defer mu.Unlock()
		all := strings.Join(told, "\n")
		return strings.Contains(all, "refused") && strings.Contains(all, "edit.md:6") && strings.Contains(all, "M3 added")
	})

	// The run goes on with the edited plan.
	// "go" for m's coder, once its agent for m is up (a coder moving to another
	// milestone is a new agent at the same path).
	goOn := func(m string) {
		t.Helper()
		var id string
		wait.For(t, 10*time.Second, m+"'s coder up", func() bool {
			for _, x := range g.status("edit").Milestones {
				if x.ID == m && x.Coder != "" {
					a, err := g.svc.Get(ctx, "runs/edit/"+x.Coder)
					id = a.ID
					settled := a.State == wire.StateIdle || a.State == wire.StateDone || a.State == wire.StateWorking
					return err == nil && settled && a.PaneID != "" && strings.Contains(a.Prompt, "milestone "+m+":")
				}
			}
			return false
		})
		if err := g.svc.Send(ctx, wire.SendParams{Target: id, Text: "go", Enter: true}); err != nil {
			t.Fatal(err)
		}
	}
	goOn("M1")
	g.waitState("edit", "M1", "merged", 30*time.Second)
	g.waitState("edit", "M3", "ready", 5*time.Second)
	if _, err := g.svc.RunDispatch(ctx, runapi.RunMilestonesParams{Name: "edit", Milestones: []string{"M3"}}); err != nil {
		t.Fatal(err)
	}
	goOn("M3")
	if !wait.Until(30*time.Second, func() bool { return g.status("edit").State == "done" }) {
		es, _ := g.svc.RunEvents(ctx, runapi.RunEventsParams{Name: "edit"})
		var b strings.Builder
		for _, e := range es {
			b.WriteString(e.Kind + " " + e.M + " " + firstLine(e.Text) + "\n")
		}
		t.Fatalf("the run did not finish: %+v\n%s", g.status("edit"), b.String())
	}
	if files := sh(t, g.repo, "git ls-tree --name-only feature/edit | tr '\n' ' '"); files != "M1.txt M3.txt README.md" {
		t.Fatalf("tree %q", files)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Fatalf("the edited check did not run: %v", err)
	}
}
