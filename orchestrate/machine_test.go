package orchestrate_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"orcr/orchestrate"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

func newRecord(t *testing.T) orchestrate.Record {
	t.Helper()
	r, err := orchestrate.NewRecord("csv-import", "import CSV files", "/w/app", "claude:claude-opus-5", t0)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

var (
	good    = orchestrate.FileState{Hash: "aaaa", Milestones: 3}
	edited  = orchestrate.FileState{Hash: "bbbb", Milestones: 4}
	broken  = orchestrate.FileState{Hash: "cccc", Errors: []string{"/w/app/.orcr/plans/csv-import.md:7: unknown tier \"huge\": tiers are small, medium, high"}}
	missing = orchestrate.FileState{Missing: true}
)

// step applies inputs one after another, failing on any error, and returns the record
// and the actions of the last step.
func step(t *testing.T, r orchestrate.Record, ins ...orchestrate.Input) (orchestrate.Record, []orchestrate.Action) {
	t.Helper()
	var acts []orchestrate.Action
	for i, in := range ins {
		var err error
		r, acts, err = orchestrate.Step(r, in, t0.Add(time.Duration(i+1)*time.Minute))
		if err != nil {
			t.Fatalf("step %d (%T): %v", i, in, err)
		}
	}
	return r, acts
}

func lastEvent(r orchestrate.Record) orchestrate.Event { return r.Events[len(r.Events)-1] }

func TestNewRecord(t *testing.T) {
	r := newRecord(t)
	if r.State != orchestrate.PlanDrafting || r.File != "/w/app/.orcr/plans/csv-import.md" || r.LeadPath != "plans/csv-import/lead" || r.Rounds != 1 || lastEvent(r).Kind != "created" {
		t.Errorf("%+v", r)
	}
	for _, name := range []string{"", "Has Caps", "a/b", "-x", strings.Repeat("a", 65)} {
		if _, err := orchestrate.NewRecord(name, "r", "/w", "claude:x", t0); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
	if _, err := orchestrate.NewRecord("ok", "", "/w", "claude:x", t0); err == nil {
		t.Error("empty request accepted")
	}
}

func TestDraftApproveEdit(t *testing.T) {
	r, acts := step(t, newRecord(t), orchestrate.TurnEnded{File: good})
	if r.State != orchestrate.PlanDrafted || r.FileHash != "aaaa" || len(acts) != 1 || acts[0].Kind != orchestrate.ActNotify || lastEvent(r).Text != "3 milestones" {
		t.Fatalf("after a good turn: %+v %+v", r, acts)
	}
	r, acts = step(t, r, orchestrate.Approve{File: good})
	// The lead's work is done: its agent ends (no idle lead outlives its plan).
	if r.State != orchestrate.PlanApproved || r.ApprovedHash != "aaaa" || len(acts) != 1 || acts[0].Kind != orchestrate.ActStopLead || lastEvent(r).Kind != "approved" {
		t.Fatalf("after approve: %+v %+v", r, acts)
	}
	r, acts = step(t, r, orchestrate.FileChanged{File: edited})
	if r.State != orchestrate.PlanApproved || r.ApprovedHash != "aaaa" || lastEvent(r).Kind != "edited" ||
		len(acts) != 1 || !strings.Contains(acts[0].Text, "changed after it was approved") {
		t.Fatalf("after an edit: %+v %+v", r, acts)
	}
	n := len(r.Events)
	if r2, acts := step(t, r, orchestrate.FileChanged{File: edited}); len(r2.Events) != n || len(acts) != 0 {
		t.Error("the same edit seen twice made a second event")
	}
	r, _ = step(t, r, orchestrate.FileChanged{File: good})
	if lastEvent(r).Kind != "restored" {
		t.Errorf("back to the approved bytes: %+v", lastEvent(r))
	}
	r, acts = step(t, r, orchestrate.FileChanged{File: missing})
	if r.State != orchestrate.PlanApproved || lastEvent(r).Kind != "missing" || len(acts) != 1 || len(r.Errors) != 1 {
		t.Errorf("approved file deleted: %+v %+v", r, acts)
	}
}

func TestParseErrorsGoBackToTheLeadTwiceThenFail(t *testing.T) {
	r, acts := step(t, newRecord(t), orchestrate.TurnEnded{File: broken})
	if r.State != orchestrate.PlanDrafting || r.FixRounds != 1 || len(acts) != 1 || acts[0].Kind != orchestrate.ActSendLead ||
		!strings.Contains(acts[0].Text, `csv-import.md:7: unknown tier "huge"`) || !strings.Contains(acts[0].Text, "write the whole file again to /w/app/.orcr/plans/csv-import.md") {
		t.Fatalf("round 1: %+v %+v", r, acts)
	}
	fixed, _ := step(t, r, orchestrate.TurnEnded{File: good})
	if fixed.State != orchestrate.PlanDrafted || fixed.FixRounds != 0 || fixed.Errors != nil {
		t.Fatalf("fixed in round 2: %+v", fixed)
	}
	r, acts = step(t, r, orchestrate.TurnEnded{File: missing})
	if r.State != orchestrate.PlanDrafting || r.FixRounds != 2 || !strings.Contains(acts[0].Text, "csv-import.md: the file does not exist") {
		t.Fatalf("round 2: %+v %+v", r, acts)
	}
	r, acts = step(t, r, orchestrate.TurnEnded{File: broken})
	if r.State != orchestrate.PlanFailed || len(acts) != 1 || acts[0].Kind != orchestrate.ActNotify || !strings.Contains(acts[0].Text, "unknown tier") || len(r.Errors) != 1 {
		t.Fatalf("round 3: %+v %+v", r, acts)
	}
	// A person fixes the failed plan by hand: it is drafted once it parses.
	r, _ = step(t, r, orchestrate.FileChanged{File: broken}, orchestrate.FileChanged{File: good})
	if r.State != orchestrate.PlanDrafted || r.Errors != nil {
		t.Fatalf("failed, then fixed by hand: %+v", r)
	}
}

func TestRejectSendsTheReasonAndRedrafts(t *testing.T) {
	r, _ := step(t, newRecord(t), orchestrate.TurnEnded{File: good})
	reason := "split M2: parser and sink are independent"
	r, acts := step(t, r, orchestrate.Reject{Reason: "  " + reason + "\n"})
	if r.State != orchestrate.PlanRejected || r.Reason != reason || r.Rounds != 2 || len(acts) != 1 || acts[0].Kind != orchestrate.ActSendLead || !strings.Contains(acts[0].Text, reason) {
		t.Fatalf("after reject: %+v %+v", r, acts)
	}
	// Rejecting again before the lead took it up replaces the reason, same round.
	r, _ = step(t, r, orchestrate.Reject{Reason: "also name the check"})
	if r.Rounds != 2 || r.Reason != "also name the check" {
		t.Errorf("second reject: %+v", r)
	}
	started, _ := step(t, r, orchestrate.TurnStarted{})
	if started.State != orchestrate.PlanDrafting || lastEvent(started).Kind != "redrafting" {
		t.Fatalf("lead took it up: %+v", started)
	}
	// While the lead writes, file changes are its own and change nothing.
	if same, acts := step(t, started, orchestrate.FileChanged{File: broken}); len(same.Events) != len(started.Events) || acts != nil {
		t.Error("a file change while drafting was acted on")
	}
	// The new draft's turn may end before its start was seen: straight to drafted.
	r, _ = step(t, r, orchestrate.TurnEnded{File: edited})
	if r.State != orchestrate.PlanDrafted || r.FileHash != "bbbb" {
		t.Fatalf("redrafted: %+v", r)
	}
}

func TestDraftedFileEditedOrDeleted(t *testing.T) {
	r, _ := step(t, newRecord(t), orchestrate.TurnEnded{File: good})
	r, _ = step(t, r, orchestrate.FileChanged{File: broken})
	if r.State != orchestrate.PlanDrafted || len(r.Errors) != 1 || lastEvent(r).Kind != "invalid" {
		t.Fatalf("broken by an edit: %+v", r)
	}
	if _, _, err := orchestrate.Step(r, orchestrate.Approve{File: broken}, t0); err == nil || !strings.Contains(err.Error(), "unknown tier") {
		t.Fatalf("approved a broken file: %v", err)
	}
	r, _ = step(t, r, orchestrate.FileChanged{File: missing})
	if lastEvent(r).Kind != "missing" || !strings.Contains(r.Errors[0], "does not exist") {
		t.Fatalf("deleted: %+v", r)
	}
	if _, _, err := orchestrate.Step(r, orchestrate.Approve{File: missing}, t0); err == nil || !strings.Contains(err.Error(), "does not exist") {
		t.Fatalf("approved a missing file: %v", err)
	}
	r, _ = step(t, r, orchestrate.FileChanged{File: edited}, orchestrate.Approve{File: edited})
	if r.State != orchestrate.PlanApproved || r.ApprovedHash != "bbbb" {
		t.Fatalf("edited, then approved: %+v", r)
	}
}

// TestUserRequestsByState is the table of which requests each state allows.
func TestUserRequestsByState(t *testing.T) {
	states := map[orchestrate.PlanState][]orchestrate.Input{
		orchestrate.PlanDrafting: nil,
		orchestrate.PlanDrafted:  {orchestrate.TurnEnded{File: good}},
		orchestrate.PlanRejected: {orchestrate.TurnEnded{File: good}, orchestrate.Reject{Reason: "x"}},
		orchestrate.PlanApproved: {orchestrate.TurnEnded{File: good}, orchestrate.Approve{File: good}},
		orchestrate.PlanFailed:   {orchestrate.TurnEnded{File: broken}, orchestrate.TurnEnded{File: broken}, orchestrate.TurnEnded{File: broken}},
	}
	allowed := map[orchestrate.PlanState]map[string]bool{
		orchestrate.PlanDrafting: {"approve": false, "reject": false},
		orchestrate.PlanDrafted:  {"approve": true, "reject": true},
		orchestrate.PlanRejected: {"approve": false, "reject": true},
		orchestrate.PlanApproved: {"approve": false, "reject": false},
		orchestrate.PlanFailed:   {"approve": false, "reject": true},
	}
	for state, path := range states {
		r, _ := step(t, newRecord(t), path...)
		if r.State != state {
			t.Fatalf("setup for %s reached %s", state, r.State)
		}
		for op, in := range map[string]orchestrate.Input{"approve": orchestrate.Approve{File: good}, "reject": orchestrate.Reject{Reason: "why"}} {
			before := fmt.Sprintf("%+v", r)
			_, _, err := orchestrate.Step(r, in, t0)
			if ok := err == nil; ok != allowed[state][op] {
				t.Errorf("%s in %s: err %v, allowed %v", op, state, err, allowed[state][op])
			}
			if err != nil && !errors.Is(err, orchestrate.ErrTransition) {
				t.Errorf("%s in %s: %v is not ErrTransition", op, state, err)
			}
			if fmt.Sprintf("%+v", r) != before {
				t.Errorf("%s in %s changed the caller's record", op, state)
			}
		}
	}
	r, _ := step(t, newRecord(t), orchestrate.TurnEnded{File: good})
	if _, _, err := orchestrate.Step(r, orchestrate.Reject{Reason: " "}, t0); err == nil || errors.Is(err, orchestrate.ErrTransition) || !strings.Contains(err.Error(), "give a reason") {
		t.Errorf("reject without a reason: %v", err)
	}
}

func TestStepLeavesTheInputRecordAlone(t *testing.T) {
	r, _ := step(t, newRecord(t), orchestrate.TurnEnded{File: broken})
	events, errs := len(r.Events), r.Errors[0]
	grown := make([]orchestrate.Event, events, events+10) // room to append in place
	copy(grown, r.Events)
	r.Events = grown
	_, _, _ = orchestrate.Step(r, orchestrate.TurnEnded{File: broken}, t0)
	if len(r.Events) != events || r.Errors[0] != errs || r.Events[:events+1][events] != (orchestrate.Event{}) {
		t.Fatal("Step wrote into the caller's slices")
	}
}

func TestEventsAreBounded(t *testing.T) {
	r, _ := step(t, newRecord(t), orchestrate.TurnEnded{File: good}, orchestrate.Approve{File: good})
	for i := range 150 {
		r, _ = step(t, r, orchestrate.FileChanged{File: orchestrate.FileState{Hash: fmt.Sprint(i)}})
	}
	if len(r.Events) != 100 || lastEvent(r).Text != fmt.Sprintf("changed after approval (%s → %s)", "aaaa", "149") {
		t.Fatalf("%d events, last %+v", len(r.Events), lastEvent(r))
	}
}
