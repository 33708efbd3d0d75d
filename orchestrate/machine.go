package orchestrate

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Input is something that happened to a plan: a fact the daemon observed (TurnEnded,
// TurnStarted, FileChanged) or a request of the user (Reject, Approve).
type Input interface{ planInput() }

// TurnEnded: the lead's turn ended; File is the plan file as it was then.
type TurnEnded struct{ File FileState }

// TurnStarted: the lead started a turn (so a rejection's reason has reached it).
type TurnStarted struct{}

// Reject: the user rejects the draft; Reason goes to the lead.
type Reject struct{ Reason string }

// Approve: the user approves the file as it is now.
type Approve struct{ File FileState }

// FileChanged: the plan file changed on disk (a person's edit, or it was deleted).
type FileChanged struct{ File FileState }

func (TurnEnded) planInput()   {}
func (TurnStarted) planInput() {}
func (Reject) planInput()      {}
func (Approve) planInput()     {}
func (FileChanged) planInput() {}

// ActionKind is what the daemon must do after a step.
type ActionKind string

const (
	// ActSendLead: type Text into the plan's lead (resuming it first if it has ended).
	ActSendLead ActionKind = "send-lead"
	// ActNotify: tell the user Text (a notification; the plan needs them).
	ActNotify ActionKind = "notify"
	// ActStopLead: the lead's work is done (the plan is approved): end its agent,
	// so no idle lead outlives its plan. A rejection later starts it again.
	ActStopLead ActionKind = "stop-lead"
)

// Action is one side effect a step asks for. Step itself does none, so the daemon can
// store the new record first and then act (intent before effect).
type Action struct {
	Kind ActionKind
	Text string
}

// ErrTransition is what a user request that the plan's state does not allow wraps.
var ErrTransition = errors.New("not allowed in this state")

// TransitionError says why a request was refused and what to do instead.
type TransitionError struct {
	Plan  string
	State PlanState
	Op    string // "approve", "reject"
	Hint  string
}

func (e *TransitionError) Error() string {
	return fmt.Sprintf("cannot %s plan %s: it is %s; %s", e.Op, e.Plan, e.State, e.Hint)
}

func (e *TransitionError) Is(target error) bool { return target == ErrTransition }

// Step applies in to r and returns the new record and the actions to take, or an error
// (a *TransitionError, or a bad request) leaving r unchanged. It is pure: no I/O, no
// clock but now.
//
// The transitions:
//
//	drafting|rejected + TurnEnded(parses)   → drafted
//	drafting|rejected + TurnEnded(errors)   → drafting, errors to the lead (≤ MaxFixRounds), then failed
//	rejected          + TurnStarted         → drafting
//	drafted|failed    + Reject(reason)      → rejected, reason to the lead
//	drafted           + Approve(parses)     → approved, hash recorded
//	drafted           + FileChanged         → drafted, errors updated ("edited"/"invalid"/"missing")
//	approved          + FileChanged(other)  → approved, an "edited" event and a notification
//	failed            + FileChanged(parses) → drafted (a person fixed it)
//
// Facts that change nothing in a state (a turn ending after the draft, a file change
// while the lead writes) are accepted and ignored; only user requests are refused.
func Step(r Record, in Input, now time.Time) (Record, []Action, error) {
	r.Errors = slices.Clone(r.Errors)
	r.Events = slices.Clone(r.Events)
	switch in := in.(type) {
	case TurnEnded:
		if r.State == PlanDrafting || r.State == PlanRejected {
			return turnEnded(r, in.File, now)
		}
		return fileChanged(r, in.File, now)
	case TurnStarted:
		if r.State == PlanRejected {
			r.State = PlanDrafting
			r.event(now, "redrafting", "the lead took up the rejection")
		}
		return r, nil, nil
	case FileChanged:
		if r.State == PlanDrafting || r.State == PlanRejected {
			return r, nil, nil // the lead is writing; its turn's end decides
		}
		return fileChanged(r, in.File, now)
	case Reject:
		return reject(r, in.Reason, now)
	case Approve:
		return approve(r, in.File, now)
	}
	return r, nil, fmt.Errorf("plan %s: unknown input %T", r.Name, in)
}

func turnEnded(r Record, f FileState, now time.Time) (Record, []Action, error) {
	if r.State == PlanRejected {
		// The turn that took up the rejection ended before its start was seen.
		r.State = PlanDrafting
		r.event(now, "redrafting", "the lead took up the rejection")
	}
	if f.OK() {
		r.State, r.FileHash, r.Errors, r.FixRounds = PlanDrafted, f.Hash, nil, 0
		r.event(now, "drafted", fmt.Sprintf("%d milestones", f.Milestones))
		return r, []Action{{Kind: ActNotify, Text: fmt.Sprintf("plan %s is drafted: review it with `orcr plan show %s`, then approve or reject it", r.Name, r.Name)}}, nil
	}
	r.FileHash = f.Hash
	r.Errors = fileErrors(r, f)
	if r.FixRounds >= MaxFixRounds {
		r.State = PlanFailed
		r.event(now, "failed", fmt.Sprintf("still %d errors after %d fix rounds", len(r.Errors), r.FixRounds))
		return r, []Action{{Kind: ActNotify, Text: fmt.Sprintf("plan %s failed: the lead's file still does not parse after %d rounds:\n%s\nFix the file with `orcr plan edit %s`, or reject it with a reason for a new draft.",
			r.Name, r.FixRounds, strings.Join(r.Errors, "\n"), r.Name)}}, nil
	}
	r.FixRounds++
	r.event(now, "invalid", fmt.Sprintf("%d errors; sent back to the lead (round %d of %d)", len(r.Errors), r.FixRounds, MaxFixRounds))
	return r, []Action{{Kind: ActSendLead, Text: FixMessage(r.File, r.Errors)}}, nil
}

func fileErrors(r Record, f FileState) []string {
	if f.Missing {
		return []string{fmt.Sprintf("%s: the file does not exist", r.File)}
	}
	return slices.Clone(f.Errors)
}

func fileChanged(r Record, f FileState, now time.Time) (Record, []Action, error) {
	errs := fileErrorsIfAny(r, f)
	if f.Hash == r.FileHash && slices.Equal(errs, r.Errors) {
		return r, nil, nil // nothing new
	}
	r.FileHash, r.Errors = f.Hash, errs
	switch r.State {
	case PlanDrafted:
		switch {
		case f.Missing:
			r.event(now, "missing", "the plan file was deleted; approve is refused until it is back")
		case len(errs) > 0:
			r.event(now, "invalid", fmt.Sprintf("edited; %d errors, approve is refused until they are fixed", len(errs)))
		default:
			r.event(now, "edited", "")
		}
		return r, nil, nil
	case PlanApproved:
		switch {
		case f.Hash == r.ApprovedHash && !f.Missing:
			r.event(now, "restored", "the file is the approved version again")
			return r, nil, nil
		case f.Missing:
			r.event(now, "missing", "the approved plan file was deleted")
		default:
			r.event(now, "edited", fmt.Sprintf("changed after approval (%s → %s)", short(r.ApprovedHash), short(f.Hash)))
		}
		return r, []Action{{Kind: ActNotify, Text: fmt.Sprintf("plan %s changed after it was approved: %s", r.Name, r.Events[len(r.Events)-1].Text)}}, nil
	case PlanFailed:
		if f.OK() {
			r.State, r.FixRounds = PlanDrafted, 0
			r.event(now, "drafted", fmt.Sprintf("edited; parses now (%d milestones)", f.Milestones))
		}
		return r, nil, nil
	}
	return r, nil, nil
}

// fileErrorsIfAny is fileErrors, empty for a file that parses.
func fileErrorsIfAny(r Record, f FileState) []string {
	if f.OK() {
		return nil
	}
	return fileErrors(r, f)
}

func short(hash string) string {
	if len(hash) > 12 {
		return hash[:12]
	}
	if hash == "" {
		return "none"
	}
	return hash
}

func reject(r Record, reason string, now time.Time) (Record, []Action, error) {
	reason = strings.TrimSpace(reason)
	switch r.State {
	case PlanDrafted, PlanFailed, PlanRejected:
	case PlanDrafting:
		return r, nil, &TransitionError{r.Name, r.State, "reject", "the lead is still writing it; reject it once `orcr plan ls` shows it drafted"}
	default:
		return r, nil, &TransitionError{r.Name, r.State, "reject", "an approved plan is final; start a new plan for a different one"}
	}
	if r.Lead == LeadNone {
		return r, nil, &TransitionError{r.Name, r.State, "reject", "it has no lead to redraft it; change it with `orcr plan edit " + r.Name + "`"}
	}
	if reason == "" {
		return r, nil, fmt.Errorf("reject plan %s: give a reason; the lead redrafts from it", r.Name)
	}
	if r.State != PlanRejected {
		r.Rounds++ // a second rejection before the lead took up the first is the same round
	}
	r.State, r.Reason, r.FixRounds, r.Errors = PlanRejected, reason, 0, nil
	r.event(now, "rejected", reason)
	return r, []Action{{Kind: ActSendLead, Text: RejectMessage(r.File, reason)}}, nil
}

func approve(r Record, f FileState, now time.Time) (Record, []Action, error) {
	switch r.State {
	case PlanDrafted:
	case PlanDrafting, PlanRejected:
		return r, nil, &TransitionError{r.Name, r.State, "approve", "the lead is still writing it; approve it once `orcr plan ls` shows it drafted"}
	case PlanApproved:
		return r, nil, &TransitionError{r.Name, r.State, "approve", "it is approved already"}
	default:
		return r, nil, &TransitionError{r.Name, r.State, "approve", "fix the file with `orcr plan edit " + r.Name + "` (it becomes drafted when it parses), or reject it with a reason"}
	}
	if !f.OK() {
		return r, nil, fmt.Errorf("cannot approve plan %s: the file has problems; fix them with `orcr plan edit %s`:\n%s", r.Name, r.Name, strings.Join(fileErrors(r, f), "\n"))
	}
	r.State, r.ApprovedHash, r.FileHash, r.Errors = PlanApproved, f.Hash, f.Hash, nil
	r.event(now, "approved", "sha256 "+f.Hash)
	return r, []Action{{Kind: ActStopLead}}, nil
}

// FixMessage is what goes back to the lead when its file does not parse.
func FixMessage(file string, errs []string) string {
	return fmt.Sprintf("The plan file %s does not parse:\n\n%s\n\nFix every error above, write the whole file again to %s, and stop.", file, strings.Join(errs, "\n"), file)
}

// RejectMessage is what goes to the lead when the user rejects its draft.
func RejectMessage(file, reason string) string {
	return fmt.Sprintf("The user rejected the plan in %s. Their reason:\n\n%s\n\nRevise the plan to answer it, write the whole file again to %s, and stop.", file, reason, file)
}
