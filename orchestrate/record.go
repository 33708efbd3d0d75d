package orchestrate

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"orcr/internal/regfile"
	planapi "orcr/orchestrate/api"
	"orcr/planning"
)

// PlanState is where a plan is in its life (DESIGN §8).
type PlanState string

const (
	// PlanDrafting: the lead is writing the file (first draft or a fix round).
	PlanDrafting PlanState = planapi.StateDrafting
	// PlanDrafted: the file parses; it waits for the user to approve or reject it.
	PlanDrafted PlanState = planapi.StateDrafted
	// PlanApproved: the user approved it; its hash is recorded.
	PlanApproved PlanState = planapi.StateApproved
	// PlanRejected: the user rejected it with a reason that is on its way to the lead;
	// the plan is drafting again as soon as the lead starts its turn.
	PlanRejected PlanState = planapi.StateRejected
	// PlanFailed: the lead's file still did not parse after MaxFixRounds rounds.
	PlanFailed PlanState = planapi.StateFailed
)

// MaxFixRounds is how many times parse errors go back to the lead before the plan fails.
const MaxFixRounds = 2

// maxRecordEvents bounds the events a record keeps (the oldest go), so a plan edited
// for months does not grow its record without end.
const maxRecordEvents = 100

// Record is a plan's durable state, stored in the "plans" bucket under its name.
type Record struct {
	Name     string `json:"name"`
	Request  string `json:"request"`
	Repo     string `json:"repo"` // the repository's folder, where the lead runs
	File     string `json:"file"` // <repo>/.orcr/plans/<name>.md
	LeadID   string `json:"leadId,omitempty"`
	LeadPath string `json:"leadPath"` // plans/<name>/lead
	Lead     string `json:"lead"`     // provider:model the lead runs on

	State PlanState `json:"state"`
	// Rounds counts drafts asked of the lead: 1, plus one per rejection.
	Rounds int `json:"rounds"`
	// FixRounds counts parse-error rounds sent back for the current draft.
	FixRounds    int      `json:"fixRounds,omitempty"`
	Reason       string   `json:"reason,omitempty"`       // the last rejection's reason
	FileHash     string   `json:"fileHash,omitempty"`     // sha256 of the file when last read
	ApprovedHash string   `json:"approvedHash,omitempty"` // sha256 of the file approved
	Errors       []string `json:"errors,omitempty"`       // what is wrong with the file now

	// LeadTurnAt is the state instant (wire.Agent.StateAt) of the lead's last turn end
	// the service handled, so a turn end seen twice (a replayed event, a restart that
	// finds the lead done) is handled once.
	LeadTurnAt time.Time `json:"leadTurnAt,omitzero"`
	// Pending is a message for the lead stored before it is sent (intent before
	// effect) and cleared once sent; a restart finding it set sends it again.
	Pending string `json:"pending,omitempty"`

	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
	Events  []Event   `json:"events,omitempty"`
}

// Event is one thing that happened to a plan, newest last.
type Event struct {
	At   time.Time `json:"at"`
	Kind string    `json:"kind"` // created drafted invalid failed rejected redrafting approved edited missing restored
	Text string    `json:"text,omitempty"`
}

// PlanFile is where plan name of repo lives.
func PlanFile(repo, name string) string {
	return filepath.Join(repo, ".orcr", "plans", name+".md")
}

// LeadPath is the agent path of a plan's lead.
func LeadPath(name string) string { return "plans/" + name + "/lead" }

// NewRecord is a plan that has just been asked of its lead.
func NewRecord(name, request, repo, lead string, now time.Time) (Record, error) {
	if err := planning.ValidPlanName(name); err != nil {
		return Record{}, err
	}
	if request == "" {
		return Record{}, errors.New("a plan needs a request: say what it is for")
	}
	r := Record{
		Name: name, Request: request, Repo: repo, File: PlanFile(repo, name),
		LeadPath: LeadPath(name), Lead: lead, State: PlanDrafting, Rounds: 1,
		Created: now, Updated: now,
	}
	r.event(now, "created", "lead "+lead)
	return r, nil
}

func (r *Record) event(now time.Time, kind, text string) {
	r.Events = append(r.Events, Event{At: now, Kind: kind, Text: text})
	if n := len(r.Events) - maxRecordEvents; n > 0 {
		r.Events = append([]Event(nil), r.Events[n:]...)
	}
	r.Updated = now
}

// FileState is what the plan file held when the daemon read it.
type FileState struct {
	Missing    bool     // no file at the path
	Hash       string   // sha256 of its bytes
	Errors     []string // parse errors, each naming its line; or why it could not be read
	Milestones int
}

// OK reports a file that exists and parses.
func (f FileState) OK() bool { return !f.Missing && len(f.Errors) == 0 }

// ReadPlanFile reads and parses the plan file at path. Nothing about the file is an
// error of the call: a missing or unreadable file is reported in the FileState, so a
// plan whose file vanished says so instead of failing whatever looked at it.
func ReadPlanFile(path string, opts planning.Options) FileState {
	b, err := regfile.Read(path)
	if errors.Is(err, os.ErrNotExist) {
		return FileState{Missing: true}
	}
	if err != nil {
		return FileState{Errors: []string{fmt.Sprintf("cannot read %s: %v", path, err)}}
	}
	if opts.File == "" {
		opts.File = path
	}
	p, err := planning.Parse(b, opts)
	fs := FileState{Hash: planning.HashBytes(b), Milestones: len(p.Milestones)}
	var es planning.Errors
	if errors.As(err, &es) {
		fs.Errors = es.Lines()
	} else if err != nil {
		fs.Errors = []string{err.Error()}
	}
	return fs
}
