package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"orcr/core"
	"orcr/core/wire"
	"orcr/planning"
)

// Durability (DESIGN §8): a run is its record in bucket "runs" (key: the run's name)
// and its append-only event log in bucket "runlog.NAME" (key: the zero-padded seq).
//
//   - A fact is appended to the log before Step sees it; the record, carrying the
//     seq of the last entry it reflects, is written after. A crash between the two
//     leaves an entry the record does not reflect; Open replays it (Step is pure and
//     the entry keeps its instant, so the replay computes the same run).
//   - The actions a step asks for are the record's Outbox (intent) from that same
//     write; each is removed by a "did" entry once performed (outcome). A restarted
//     autopilot performs what is still in the Outbox, so nothing is lost, and every
//     action is written to be safe to perform twice (see git.go).

// Buckets.
const (
	RunsBucket = "runs"
	logPrefix  = "runlog."
	// recordVersion is the envelope version this build reads and writes.
	recordVersion = 1
)

// Record is a run's durable state: the machine's Run plus what the autopilot needs
// around it.
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
type Pending struct {
	Seq    uint64    `json:"seq"`
	I      int       `json:"i"`
	At     time.Time `json:"at"` // when it was asked for (squash commits are dated so)
	Action Action    `json:"action"`
}

// Ref names the pending action in "did" entries: "SEQ.I".
func (p Pending) Ref() string { return fmt.Sprintf("%d.%d", p.Seq, p.I) }

// Entry types of the event log.
const (
	EntryStart   = "start"   // the run started: Actions are the first ones
	EntryFact    = "fact"    // Fact happened; Actions are what Step asked for
	EntryDid     = "did"     // the pending action Ref was performed (Text: its error, if any)
	EntryRefused = "refused" // a request Step refused (Text: why)
)

// Entry is one entry of a run's event log.
type Entry struct {
	Seq     uint64    `json:"seq"`
	At      time.Time `json:"at"`
	Type    string    `json:"type"`
	Fact    *Fact     `json:"fact,omitempty"`
	Actions []Action  `json:"actions,omitempty"`
	Ref     string    `json:"ref,omitempty"`
	Kind    string    `json:"kind,omitempty"` // the performed action's kind, for reading the log
	Text    string    `json:"text,omitempty"`
	// M and What say, in a "did" entry, whose the performed action was and what it
	// did ("did lead" rows said neither).
	M    string `json:"m,omitempty"`
	What string `json:"what,omitempty"`
}

type envelope struct {
	V   int     `json:"v"`
	Rec *Record `json:"rec"`
}

// Runs keeps run records and their logs in a Store. Each run's changes are
// serialised by one lock, so a fact is logged, stepped and recorded before the next.
type Runs struct {
	st core.Buckets
	mu sync.Mutex
	// refused holds, per run, the refusals logged since its last accepted fact, so
	// the same request refused again is not logged again (a script asking for the
	// same dispatch in a loop grew a run log by thousands of identical entries).
	// Step is pure: while no fact changed the run, the same fact is refused for the
	// same reason, and logging it again records nothing new.
	refused map[string]map[string]bool
}

// maxRefusalKeys bounds one run's remembered refusals; past it a refusal is logged
// even if it was logged before (the log stays right, only longer).
const maxRefusalKeys = 1024

// NewRuns returns the runs kept in st.
func NewRuns(st core.Buckets) *Runs { return &Runs{st: st, refused: map[string]map[string]bool{}} }

// refusalKey is what makes two refusals the same: the fact and the reason.
func refusalKey(f Fact, why error) string {
	b, _ := json.Marshal(f)
	return string(b) + "\x00" + why.Error()
}

// ErrRunExists is what Create returns for a name that has a run.
var ErrRunExists = errors.New("run exists")

// Create stores a new run with its start entry; initial are the actions New asked for.
func (rs *Runs) Create(ctx context.Context, rec Record, initial []Action, now time.Time) (Record, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if _, err := rs.get(ctx, rec.Run.Name); err == nil {
		return Record{}, fmt.Errorf("run %s exists: %w", rec.Run.Name, ErrRunExists)
	} else if !errors.Is(err, wire.ErrNotFound) {
		return Record{}, err
	}
	rec.Created, rec.Updated, rec.Seq, rec.Outbox = now, now, 0, nil
	e := Entry{Seq: 1, At: now, Type: EntryStart, Actions: initial}
	if err := rs.append(ctx, rec.Run.Name, e); err != nil {
		return Record{}, err
	}
	rec = withEntry(rec, e)
	return rec, rs.put(ctx, rec)
}

// withEntry is rec after entry e: its actions join the outbox, a did leaves it.
func withEntry(rec Record, e Entry) Record {
	rec.Seq, rec.Updated = e.Seq, e.At
	rec.Outbox = slices.Clone(rec.Outbox)
	for i, a := range e.Actions {
		if a.Kind == ALead || a.Kind == ANote {
			continue // records of the step, nothing to perform
		}
		rec.Outbox = append(rec.Outbox, Pending{Seq: e.Seq, I: i, At: e.At, Action: a})
	}
	if e.Type == EntryDid {
		rec.Outbox = slices.DeleteFunc(rec.Outbox, func(p Pending) bool { return p.Ref() == e.Ref })
	}
	if f := e.Fact; f != nil && f.Kind == FTurnEnded && f.Coder != "" && f.TurnAt.After(rec.Turns[f.Coder]) {
		// The turn end is handled in the same write that logs it (Reconcile and
		// the event follower skip turn ends up to Turns).
		rec.Turns = maps.Clone(rec.Turns)
		if rec.Turns == nil {
			rec.Turns = map[string]time.Time{}
		}
		rec.Turns[f.Coder] = f.TurnAt
	}
	return rec
}

// Apply logs fact f, steps the run with it and stores the result; it returns the new
// record and the pending actions this step added (perform them, then call Did). A
// refused request is logged as refused and returned as the error.
func (rs *Runs) Apply(ctx context.Context, name string, f Fact, now time.Time) (Record, []Pending, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rec, err := rs.get(ctx, name)
	if err != nil {
		return Record{}, nil, err
	}
	seq := rec.Seq + 1
	next, actions, stepErr := Step(rec.Run, f, now)
	e := Entry{Seq: seq, At: now, Type: EntryFact, Fact: &f, Actions: actions}
	if stepErr != nil {
		e = Entry{Seq: seq, At: now, Type: EntryRefused, Fact: &f, Text: stepErr.Error()}
		key := refusalKey(f, stepErr)
		if rs.refused[name][key] {
			return rec, nil, stepErr // logged already, and the run has not changed since
		}
		if rs.refused[name] == nil {
			rs.refused[name] = map[string]bool{}
		}
		if len(rs.refused[name]) < maxRefusalKeys {
			rs.refused[name][key] = true
		}
	} else {
		delete(rs.refused, name) // the run changes: what was refused may not be now
	}
	if err := rs.append(ctx, name, e); err != nil {
		return rec, nil, err
	}
	if stepErr == nil {
		rec.Run = next
		if f.Kind == FPlanEdited && f.Check != "" {
			rec.Check = f.Check // the checks from here on run the edited plan's
		}
	}
	rec = withEntry(rec, e)
	if err := rs.put(ctx, rec); err != nil {
		return rec, nil, err
	}
	if stepErr != nil {
		return rec, nil, stepErr
	}
	var added []Pending
	for _, p := range rec.Outbox {
		if p.Seq == seq {
			added = append(added, p)
		}
	}
	return rec, added, nil
}

// Did records that pending action p was performed (errText: how it failed, if it did).
func (rs *Runs) Did(ctx context.Context, name string, p Pending, errText string, now time.Time) (Record, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rec, err := rs.get(ctx, name)
	if err != nil {
		return Record{}, err
	}
	if !slices.ContainsFunc(rec.Outbox, func(x Pending) bool { return x.Ref() == p.Ref() }) {
		return rec, nil // performed twice (a restart re-performed it): recorded already
	}
	e := Entry{Seq: rec.Seq + 1, At: now, Type: EntryDid, Ref: p.Ref(), Kind: string(p.Action.Kind), Text: errText,
		M: p.Action.M, What: p.Action.what()}
	if err := rs.append(ctx, name, e); err != nil {
		return rec, err
	}
	rec = withEntry(rec, e)
	return rec, rs.put(ctx, rec)
}

// Update changes the autopilot's part of run name's record (agent ids, models);
// fn must not touch Run, Seq or Outbox, which only the log moves.
func (rs *Runs) Update(ctx context.Context, name string, fn func(*Record)) (Record, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rec, err := rs.get(ctx, name)
	if err != nil {
		return Record{}, err
	}
	run, seq, out := rec.Run, rec.Seq, rec.Outbox
	fn(&rec)
	rec.Run, rec.Seq, rec.Outbox = run, seq, out
	return rec, rs.put(ctx, rec)
}

// Get returns run name's record with every logged entry applied (replaying what a
// crash left between a log append and the record write).
func (rs *Runs) Get(ctx context.Context, name string) (Record, error) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.get(ctx, name)
}

// List returns every run's record in name order.
func (rs *Runs) List(ctx context.Context) ([]Record, error) {
	var names []string
	err := rs.st.Scan(ctx, RunsBucket, func(key string, _ []byte) bool {
		names = append(names, key)
		return true
	})
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
	var out []Entry
	var derr error
	err := rs.st.ScanFrom(ctx, logPrefix+name, logKey(after+1), func(key string, v []byte) bool {
		var e Entry
		if derr = json.Unmarshal(v, &e); derr != nil {
			derr = fmt.Errorf("run %s: log entry %s: %w", name, key, derr)
			return false
		}
		if e.Seq > after {
			out = append(out, e)
		}
		return limit <= 0 || len(out) < limit
	})
	if err != nil {
		return nil, fmt.Errorf("run %s: read log: %w", name, err)
	}
	return out, derr
}

// Delete removes run name's record and log.
func (rs *Runs) Delete(ctx context.Context, name string) error {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var keys []string
	if err := rs.st.Scan(ctx, logPrefix+name, func(k string, _ []byte) bool { keys = append(keys, k); return true }); err != nil {
		return err
	}
	for _, k := range keys {
		if err := rs.st.Delete(ctx, logPrefix+name, k); err != nil {
			return err
		}
	}
	delete(rs.refused, name)
	return rs.st.Delete(ctx, RunsBucket, name)
}

func (rs *Runs) get(ctx context.Context, name string) (Record, error) {
	b, err := rs.st.Get(ctx, RunsBucket, name)
	if errors.Is(err, wire.ErrNotFound) {
		return Record{}, wire.Errorf(wire.CodeNotFound, "no run named %s (see `orcr run status`)", name)
	}
	if err != nil {
		return Record{}, fmt.Errorf("get run %s: %w", name, err)
	}
	var env envelope
	if err := json.Unmarshal(b, &env); err != nil {
		return Record{}, fmt.Errorf("decode run %s: %w", name, err)
	}
	if env.V != recordVersion || env.Rec == nil {
		return Record{}, fmt.Errorf("run %s: record version %d, this orcr reads version %d: upgrade orcr", name, env.V, recordVersion)
	}
	rec := *env.Rec
	if !rec.Run.Lead && rec.Lead != "" && rec.Lead != "none" {
		// A record from before the lead's inbox was Step's: its run has a lead.
		rec.Run.Lead = true
		rec.Run.Inbox, rec.Run.LeadSent = rec.OldInbox, rec.OldLeadSent
		rec.OldInbox, rec.OldLeadSent = nil, nil
	}
	// Replay what the log has beyond the record (a crash between append and put).
	tail, err := rs.entriesAfter(ctx, name, rec.Seq)
	if err != nil {
		return Record{}, err
	}
	if len(tail) == 0 {
		return rec, nil
	}
	for _, e := range tail {
		if e.Type == EntryFact && e.Fact != nil {
			next, actions, err := Step(rec.Run, *e.Fact, e.At)
			if err == nil {
				rec.Run = next
				e.Actions = actions
			}
		}
		rec = withEntry(rec, e)
	}
	return rec, rs.put(ctx, rec)
}

// entriesAfter reads run name's log entries from seq+1 on, each by its key. Every
// Apply and Get calls it, almost always to find nothing: reading by key costs one
// lookup then, where scanning the log cost the whole log per fact (a 100,000-name
// dispatch spent minutes re-reading thousands of entries per name). Seqs are
// contiguous (each entry is the record's seq plus one), so the first missing key
// ends the tail.
func (rs *Runs) entriesAfter(ctx context.Context, name string, seq uint64) ([]Entry, error) {
	var out []Entry
	for next := seq + 1; ; next++ {
		b, err := rs.st.Get(ctx, logPrefix+name, logKey(next))
		if errors.Is(err, wire.ErrNotFound) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("run %s: read log entry %d: %w", name, next, err)
		}
		var e Entry
		if err := json.Unmarshal(b, &e); err != nil {
			return nil, fmt.Errorf("run %s: log entry %d: %w", name, next, err)
		}
		out = append(out, e)
	}
}

// logKey is the key of log entry seq: zero-padded, so keys sort as seqs do.
func logKey(seq uint64) string { return fmt.Sprintf("%020d", seq) }

func (rs *Runs) put(ctx context.Context, rec Record) error {
	if err := planning.ValidPlanName(rec.Run.Name); err != nil {
		return err
	}
	b, err := json.Marshal(envelope{V: recordVersion, Rec: &rec})
	if err != nil {
		return fmt.Errorf("encode run %s: %w", rec.Run.Name, err)
	}
	if err := rs.st.Put(ctx, RunsBucket, rec.Run.Name, b); err != nil {
		return fmt.Errorf("store run %s: %w", rec.Run.Name, err)
	}
	return nil
}

func (rs *Runs) append(ctx context.Context, name string, e Entry) error {
	b, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("encode run %s entry %d: %w", name, e.Seq, err)
	}
	if err := rs.st.Put(ctx, logPrefix+name, logKey(e.Seq), b); err != nil {
		return fmt.Errorf("log run %s entry %d: %w", name, e.Seq, err)
	}
	return nil
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
