package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"time"

	"orcr/core"
	"orcr/core/wire"
	"orcr/internal/outbox"
	"orcr/planning"
)

// Durability (DESIGN §8): a run is an instance of internal/outbox's durable log, the
// same mechanism workflows use. Its record is in bucket "runs" (key: the run's name)
// and its append-only event log in bucket "runlog.NAME" (key: the zero-padded seq),
// in the layout runs had before the mechanism was shared, so a run an older orcr
// started goes on under this one (and the other way round).
//
//   - A fact is appended to the log before Step sees it; the record, carrying the
//     seq of the last entry it reflects, is written after. A crash between the two
//     leaves an entry the record does not reflect; Get replays it (Step is pure and
//     the entry keeps its instant, so the replay computes the same run).
//   - The actions a step asks for are the record's Outbox (intent) from that same
//     write; each is removed by a "did" entry once performed (outcome). A restarted
//     autopilot performs what is still in the Outbox, so nothing is lost, and every
//     action is written to be safe to perform twice (see git.go).
//   - The record is written with every entry (SnapshotEvery 1): a run's record is
//     small next to a 1,000-item workflow's, and tests of a killed server read it
//     from the store.

// Buckets.
const (
	RunsBucket = "runs"
	logPrefix  = "runlog."
	// recordVersion is the envelope version this build reads and writes.
	recordVersion = 1
)

// Record is a run's durable state: the machine's Run plus what the autopilot needs
// around it. Seq, Outbox, Created and Updated are the log's (outbox.Record's): the
// state the log keeps has them zero, and Runs fills them in on the way out.
type Record struct {
	Run Run `json:"run"`

	Repo     string `json:"repo"`     // the repository's top folder
	Base     string `json:"base"`     // the branch feature/NAME was created from
	PlanFile string `json:"planFile"` // <repo>/.orcr/plans/NAME.md
	PlanHash string `json:"planHash"` // the approved hash
	Check    string `json:"check"`    // the check command
	// CheckFlag says Check came from --check at start: an edit of the plan's
	// `check:` line does not change it.
	CheckFlag bool `json:"checkFlag,omitempty"`
	// CheckTimeoutSeconds bounds one check run (default 10 minutes).
	CheckTimeoutSeconds int    `json:"checkTimeoutSeconds"`
	Mode                string `json:"mode"` // worktree | shared
	// Checkout is the branch the repository had checked out when the run started:
	// in shared mode the run puts it back after each merge and at finish, so the
	// user finds the repository where they left it.
	Checkout string `json:"checkout,omitempty"`
	Reviewer string `json:"reviewer,omitempty"` // provider[:model], empty for none

	// Coder, when set, is provider[:model] every coder runs on (instead of the
	// catalog's pick per tier); CoderArgv the shell provider's program. Lead is the
	// lead's provider[:model] ("none": no lead).
	Coder     string   `json:"coder,omitempty"`
	CoderArgv []string `json:"coderArgv,omitempty"`
	Lead      string   `json:"lead,omitempty"`
	// Nodes are the nodes coders run on, in turn (RunStartParams.Nodes; nodes.go).
	Nodes []string `json:"nodes,omitempty"`
	// SelfLead is the id of the agent that leads the run by `--lead self` (Lead is
	// then "self"): a session orcr did not start, woken like a lead it started but
	// never started, restarted or stopped by the run.
	SelfLead string `json:"selfLead,omitempty"`

	// Sent holds, per agent, when orcr last typed into it: a turn end from before
	// that is not an answer to it.
	Sent map[string]time.Time `json:"sent,omitempty"`
	// OldInbox and OldLeadSent are where a record written before the inbox moved
	// into the run (Run.Inbox) kept it; get moves them there.
	OldInbox    []string  `json:"inbox,omitempty"`
	OldLeadSent *LeadSend `json:"leadSent,omitempty"`
	// Reviewing is the review the reviewer agent Agents["reviewer"] is on:
	// "M1@<head>", written with the agent's id in one write, so a verdict is never
	// taken for another review's.
	Reviewing string `json:"reviewing,omitempty"`
	Summary   string `json:"summary,omitempty"` // the summary file, once written
	Finished  bool   `json:"finished,omitempty"`

	// Agents maps a run agent's name (lead, reviewer, coder-N) to its agent id;
	// Models the provider:model each coder runs.
	Agents map[string]string `json:"agents,omitempty"`
	Models map[string]string `json:"models,omitempty"`
	// Turns holds, per coder, when its last handled turn ended, so a turn end seen
	// again after a restart is not handled twice.
	Turns map[string]time.Time `json:"turns,omitempty"`
	// Briefs holds, per coder, the brief (its outbox ref, "SEQ.I") its agent was
	// started with: performed again after a restart, that brief finds the agent it
	// started; a new brief for the same milestone (a retry) starts a new one.
	Briefs map[string]string `json:"briefs,omitempty"`

	Seq     uint64    `json:"seq"` // the last log entry this record reflects
	Outbox  []Pending `json:"outbox,omitempty"`
	Created time.Time `json:"created"`
	Updated time.Time `json:"updated"`
}

// Pending is an action asked for and not yet performed: entry Seq's I-th action.
type Pending = outbox.Pending[Action]

// Entry types of the event log.
const (
	EntryStart   = outbox.EntryStart   // the run started: Actions are the first ones
	EntryFact    = outbox.EntryFact    // Fact happened; Actions are what Step asked for
	EntryDid     = outbox.EntryDid     // the pending action Ref was performed (Text: its error, if any)
	EntryRefused = outbox.EntryRefused // a request Step refused (Text: why)
)

// Entry is one entry of a run's event log; a "did" entry's Kind, Subject (the
// milestone) and What say whose the performed action was and what it did.
type Entry = outbox.Entry[Fact, Action]

type envelope struct {
	V   int     `json:"v"`
	Rec *Record `json:"rec"`
}

// Runs keeps run records and their logs in a Store: internal/outbox's log of the
// run machine. Each run's changes are serialised by one lock, so a fact is logged,
// stepped and recorded before the next.
type Runs struct {
	st  core.Buckets
	log *outbox.Log[Record, Fact, Action]
}

// NewRuns returns the runs kept in st.
func NewRuns(st core.Buckets) *Runs {
	return &Runs{st: st, log: outbox.New(st, RunsBucket, outbox.Machine[Record, Fact, Action]{
		Step: func(rec Record, f Fact, now time.Time) (Record, []Action, error) {
			next, actions, err := Step(rec.Run, f, now)
			if err != nil {
				return rec, nil, err
			}
			rec.Run = next
			if f.Kind == FPlanEdited && f.Check != "" {
				rec.Check = f.Check // the checks from here on run the edited plan's
			}
			return rec, actions, nil
		},
		// A lead's or a note's action is a record of the step, nothing to perform.
		Perform: func(a Action) bool { return a.Kind != ALead && a.Kind != ANote },
		Fold:    foldTurn,
		Describe: func(a Action) (string, string, string) {
			return string(a.Kind), a.M, a.what()
		},
		Clone:         cloneRecord,
		Encode:        encodeRecord,
		Decode:        decodeRecord,
		LogPrefix:     logPrefix,
		SnapshotEvery: 1,
	})}
}

// foldTurn keeps a coder's turn end as handled in the same write that logs it
// (Reconcile and the event follower skip turn ends up to Turns), refused or not.
func foldTurn(rec Record, e Entry) Record {
	if f := e.Fact; f != nil && f.Kind == FTurnEnded && f.Coder != "" && f.TurnAt.After(rec.Turns[f.Coder]) {
		rec.Turns = maps.Clone(rec.Turns)
		if rec.Turns == nil {
			rec.Turns = map[string]time.Time{}
		}
		rec.Turns[f.Coder] = f.TurnAt
	}
	return rec
}

// cloneRecord copies a record for a caller, who may change its maps and slices:
// what the cache holds stays as the log made it. (Before the log kept records in
// memory, every read decoded one from the store: this costs the same.)
func cloneRecord(rec Record) Record {
	b, err := json.Marshal(rec)
	if err != nil {
		return rec
	}
	var out Record
	if err := json.Unmarshal(b, &out); err != nil {
		return rec
	}
	return out
}

// encodeRecord stores a run's record as runs always have: the flat Record with
// the log's seq and outbox, in a versioned envelope.
func encodeRecord(o outbox.Record[Record, Action]) ([]byte, error) {
	rec := o.State
	if err := planning.ValidPlanName(rec.Run.Name); err != nil {
		return nil, err
	}
	rec.Seq, rec.Outbox, rec.Created, rec.Updated = o.Seq, o.Outbox, o.Created, o.Updated
	b, err := json.Marshal(envelope{V: recordVersion, Rec: &rec})
	if err != nil {
		return nil, fmt.Errorf("encode run %s: %w", rec.Run.Name, err)
	}
	return b, nil
}

// decodeRecord reads what encodeRecord wrote (and what every orcr before the
// shared log wrote).
func decodeRecord(name string, b []byte) (outbox.Record[Record, Action], error) {
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return outbox.Record[Record, Action]{}, fmt.Errorf("decode run %s: %w", name, err)
	}
	if env.V != recordVersion || env.Rec == nil {
		return outbox.Record[Record, Action]{}, fmt.Errorf("run %s: record version %d, this orcr reads version %d: upgrade orcr", name, env.V, recordVersion)
	}
	rec := *env.Rec
	if !rec.Run.Lead && rec.Lead != "" && rec.Lead != "none" {
		// A record from before the lead's inbox was Step's: its run has a lead.
		rec.Run.Lead = true
		rec.Run.Inbox, rec.Run.LeadSent = rec.OldInbox, rec.OldLeadSent
		rec.OldInbox, rec.OldLeadSent = nil, nil
	}
	o := outbox.Record[Record, Action]{Name: name, Seq: rec.Seq, Outbox: rec.Outbox, Created: rec.Created, Updated: rec.Updated}
	rec.Seq, rec.Outbox, rec.Created, rec.Updated = 0, nil, time.Time{}, time.Time{}
	o.State = rec
	return o, nil
}

// view is the log's record as the run package reads it.
func view(o outbox.Record[Record, Action]) Record {
	rec := o.State
	rec.Seq, rec.Outbox, rec.Created, rec.Updated = o.Seq, o.Outbox, o.Created, o.Updated
	return rec
}

// notFound names a run that is not there the way the CLI's user reads it.
func notFound(name string, err error) error {
	if errors.Is(err, wire.ErrNotFound) {
		return wire.Errorf(wire.CodeNotFound, "no run named %s (see `orcr run status`)", name)
	}
	return err
}

// ErrRunExists is what Create returns for a name that has a run.
var ErrRunExists = errors.New("run exists")

// Create stores a new run with its start entry; initial are the actions New asked for.
func (rs *Runs) Create(ctx context.Context, rec Record, initial []Action, now time.Time) (Record, error) {
	name := rec.Run.Name
	if err := planning.ValidPlanName(name); err != nil {
		return Record{}, err
	}
	rec.Seq, rec.Outbox, rec.Created, rec.Updated = 0, nil, time.Time{}, time.Time{}
	o, err := rs.log.Begin(ctx, name, rec, initial, now)
	if errors.Is(err, outbox.ErrExists) {
		return Record{}, fmt.Errorf("run %s exists: %w", name, ErrRunExists)
	}
	if err != nil {
		return Record{}, err
	}
	return view(o), nil
}

// Apply logs fact f, steps the run with it and stores the result; it returns the new
// record and the pending actions this step added (perform them, then call Did). A
// refused request is logged as refused (once while the run does not change) and
// returned as the error.
func (rs *Runs) Apply(ctx context.Context, name string, f Fact, now time.Time) (Record, []Pending, error) {
	o, added, err := rs.log.Apply(ctx, name, f, now)
	if o.Name == "" {
		return Record{}, nil, notFound(name, err)
	}
	return view(o), added, err
}

// Did records that pending action p was performed (errText: how it failed, if it
// did); recording it twice (a restart performed it again) records it once.
func (rs *Runs) Did(ctx context.Context, name string, p Pending, errText string, now time.Time) (Record, error) {
	o, err := rs.log.Did(ctx, name, p, errText, now)
	if o.Name == "" {
		return Record{}, notFound(name, err)
	}
	return view(o), err
}

// Update changes the autopilot's part of run name's record (agent ids, models);
// fn must not touch Run, Seq or Outbox, which only the log moves.
func (rs *Runs) Update(ctx context.Context, name string, fn func(*Record)) (Record, error) {
	o, err := rs.log.Amend(ctx, name, func(o outbox.Record[Record, Action]) Record {
		rec := view(o)
		fn(&rec)
		rec.Run = o.State.Run
		rec.Seq, rec.Outbox, rec.Created, rec.Updated = 0, nil, time.Time{}, time.Time{}
		return rec
	})
	if o.Name == "" {
		return Record{}, notFound(name, err)
	}
	return view(o), err
}

// Get returns run name's record with every logged entry applied (replaying what a
// crash left between a log append and the record write).
func (rs *Runs) Get(ctx context.Context, name string) (Record, error) {
	o, err := rs.log.Get(ctx, name)
	if err != nil {
		return Record{}, notFound(name, err)
	}
	return view(o), nil
}

// List returns every run's record in name order.
func (rs *Runs) List(ctx context.Context) ([]Record, error) {
	names, err := rs.log.Names(ctx)
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	var out []Record
	for _, n := range names {
		r, err := rs.Get(ctx, n)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Events returns run name's log entries with seq > after, oldest first, at most limit
// (0: all). The scan seeks to after's successor key, so a page costs its own entries
// however long the log is.
func (rs *Runs) Events(ctx context.Context, name string, after uint64, limit int) ([]Entry, error) {
	es, err := rs.log.Entries(ctx, name, after, limit)
	if err != nil {
		return nil, fmt.Errorf("run %w", err)
	}
	return es, nil
}

// Delete removes run name's record and log.
func (rs *Runs) Delete(ctx context.Context, name string) error {
	return rs.log.Delete(ctx, name)
}

// ---- names ----

// FeatureBranch is the branch a run builds: feature/NAME.
func FeatureBranch(name string) string { return "feature/" + name }

// MilestoneBranch is the branch one milestone is built on: orcr/NAME/M1.
func MilestoneBranch(name, m string) string { return "orcr/" + name + "/" + m }

// WorktreeDir is where milestone m of run name is built: under the server's home, not
// the repository, so the repository's folder stays as the user keeps it and `git
// status` there shows none of the run's checkouts. $ORCR_HOME/worktrees/runs/NAME/M1.
func WorktreeDir(home, name, m string) string {
	return filepath.Join(home, "worktrees", "runs", name, m)
}

// ReviewDir is the reviewer's read-only checkout of run name.
func ReviewDir(home, name string) string {
	return filepath.Join(home, "worktrees", "runs", name, "_review")
}

// SummaryFile is the run's summary: <repo>/.orcr/runs/NAME/summary.md.
func SummaryFile(repo, name string) string {
	return filepath.Join(repo, ".orcr", "runs", name, "summary.md")
}

// AgentPath is the agent path of a run's agent: runs/NAME/lead, runs/NAME/coder-1, ….
func AgentPath(name, agent string) string { return "runs/" + name + "/" + agent }
