package planning

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A plan file is Markdown a person edits (DESIGN §8):
//
//	# Plan: NAME
//	request: …                  required
//	check: go test ./...        required: the command every milestone must pass
//	mode: worktree|shared       optional (worktree)
//	premium: allowed|no         optional (no): may milestones name a premium model?
//
//	## M1 · Title               an id, a separator (· - — : ), a title
//	depends: - | M1, M2         required; - for none
//	tier: small|medium|high     required
//	needs: go, sql              optional: what the work touches
//	model-why: …                optional: why this tier
//	estimate: 20m               optional: a duration
//	model: provider:id          optional: pin a catalog model
//	state: planned|…|merged     optional: written by the run, one line edited in place
//
//	### Goal                    required, not empty
//	### Acceptance              required, not empty; "- [ ]" items are check boxes
//	### Notes                   optional
//
// Anything inside Goal, Acceptance and Notes is the author's Markdown and is never
// looked into, except Acceptance check boxes. Keys are matched case-insensitively.
// HTML comments are allowed anywhere.

// Header and milestone keys, in the order the format lists them.
var (
	headerKeys    = []string{"request", "check", "mode", "premium"}
	milestoneKeys = []string{"depends", "tier", "needs", "model-why", "estimate", "model", "state"}
	sectionNames  = []string{"Goal", "Acceptance", "Notes"}
)

// MilestoneStates are the states a run moves a milestone through (DESIGN §8).
var MilestoneStates = []string{
	"planned", "ready", "building", "asking", "checking", "reviewing", "merging", "merged",
	"fixing", "benched", "held", "escalated", "failed",
}

// StateMerged is the state that counts as done for dependencies.
const StateMerged = "merged"

// Options tune Parse.
type Options struct {
	// File names the plan in errors ("path:line: msg"); empty gives "line N: msg".
	File string
	// Name, when set, is the name the title must carry (the record's name).
	Name string
	// Catalog, when set, checks each `model:` against it: known, premium only when the
	// header allows it, and good enough for the milestone's tier.
	Catalog *Catalog
}

// Field is one "key: value" line.
type Field struct {
	Key   string // lower case
	Value string // trimmed
	Line  int
	// valueAt and valueEnd are the value's byte offsets within the line's text, so an
	// edit replaces just the value and keeps the author's spelling of the key.
	valueAt, valueEnd int
}

// Section is a ### section of a milestone.
type Section struct {
	Line int    // the heading's line; 0 when the section is absent
	Text string // the body as written, without leading and trailing blank lines
}

// Check is an Acceptance check box: "- [ ] text" or "- [x] text".
type Check struct {
	Line int
	Done bool
	Text string
	box  int // byte offset of the ' ' or 'x' within the line
}

// Milestone is one "## ID · Title" block.
type Milestone struct {
	ID       string
	Title    string
	Line     int // the heading's line
	Depends  []string
	Tier     string
	Needs    []string
	ModelWhy string
	Estimate time.Duration // 0 when absent
	Model    string        // "provider:id" as written, empty when absent
	State    string        // empty when absent
	Fields   []Field       // in file order

	Goal, Acceptance, Notes Section
	Checks                  []Check
}

// Field returns the milestone's field with key (lower case).
func (m *Milestone) Field(key string) (Field, bool) {
	for _, f := range m.Fields {
		if f.Key == key {
			return f, true
		}
	}
	return Field{}, false
}

// Plan is a parsed plan. It keeps its source: Bytes returns exactly what was parsed,
// and the edit methods change single lines of it, so a person's formatting survives.
type Plan struct {
	Name       string
	TitleLine  int
	Request    string
	Check      string
	Mode       string // "worktree" when absent
	Premium    bool   // `premium: allowed`
	Header     []Field
	Milestones []*Milestone

	src   []byte
	lines []srcLine
	opts  Options
}

// srcLine is one line of the source: its bytes without the line ending, and where it
// starts and ends (end includes the ending).
type srcLine struct {
	text       string
	start, end int
}

// Bytes returns the plan's source with any edits applied.
func (p *Plan) Bytes() []byte { return slices.Clone(p.src) }

// Hash is the sha256 of the plan's bytes in hex, what approval records.
func (p *Plan) Hash() string { return HashBytes(p.src) }

// HashBytes is the sha256 of b in hex.
func HashBytes(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Milestone returns the milestone with id.
func (p *Plan) Milestone(id string) *Milestone {
	for _, m := range p.Milestones {
		if m.ID == id {
			return m
		}
	}
	return nil
}

// SetState writes `state: STATE` into milestone id: the value of an existing state line
// is replaced in place; otherwise a line is added after the milestone's last key. Edits
// are meant for plans that parsed; the plan is re-read from its edited source.
func (p *Plan) SetState(id, state string) error {
	if !slices.Contains(MilestoneStates, state) {
		return fmt.Errorf("unknown milestone state %q: states are %s", state, strings.Join(MilestoneStates, ", "))
	}
	m := p.Milestone(id)
	if m == nil {
		return fmt.Errorf("no milestone %q in plan %s", id, p.Name)
	}
	if f, ok := m.Field("state"); ok {
		l := p.lines[f.Line-1]
		return p.replace(l.start+f.valueAt, l.start+f.valueEnd, state)
	}
	after := m.Line
	if n := len(m.Fields); n > 0 {
		after = m.Fields[n-1].Line
	}
	l := p.lines[after-1]
	eol := p.src[l.start+len(l.text) : l.end]
	if len(eol) == 0 { // the last line of a file without a final newline
		return p.replace(l.end, l.end, "\nstate: "+state)
	}
	return p.replace(l.end, l.end, "state: "+state+string(eol))
}

// SetCheck ticks (done) or clears the i-th Acceptance check box of milestone id.
func (p *Plan) SetCheck(id string, i int, done bool) error {
	m := p.Milestone(id)
	if m == nil {
		return fmt.Errorf("no milestone %q in plan %s", id, p.Name)
	}
	if i < 0 || i >= len(m.Checks) {
		return fmt.Errorf("milestone %s has %d check boxes, not %d", id, len(m.Checks), i+1)
	}
	c := m.Checks[i]
	mark := " "
	if done {
		mark = "x"
	}
	at := p.lines[c.Line-1].start + c.box
	return p.replace(at, at+1, mark)
}

// replace swaps src[from:to] for s and re-reads the plan.
func (p *Plan) replace(from, to int, s string) error {
	b := make([]byte, 0, len(p.src)+len(s))
	b = append(b, p.src[:from]...)
	b = append(b, s...)
	b = append(b, p.src[to:]...)
	np, _ := Parse(b, p.opts)
	*p = *np
	return nil
}

// Order returns the milestones so that each comes after everything it depends on, in
// file order where the dependencies leave a choice. It fails on a cycle or an unknown
// dependency (which Parse reports with their lines).
func (p *Plan) Order() ([]*Milestone, error) {
	placed := map[string]bool{}
	var out []*Milestone
	for len(out) < len(p.Milestones) {
		progressed := false
		for _, m := range p.Milestones {
			if placed[m.ID] || !all(m.Depends, func(d string) bool { return placed[d] }) {
				continue
			}
			placed[m.ID] = true
			out = append(out, m)
			progressed = true
			break // restart from the top so earlier milestones keep precedence
		}
		if !progressed {
			return nil, fmt.Errorf("plan %s: milestones depend on each other in a cycle or on a missing milestone", p.Name)
		}
	}
	return out, nil
}

// Ready returns the milestones that are not done but whose dependencies all are, in file
// order: what a run may dispatch next. done nil means "state is merged".
func (p *Plan) Ready(done func(id string) bool) []*Milestone {
	if done == nil {
		states := map[string]string{}
		for _, m := range p.Milestones {
			states[m.ID] = m.State
		}
		done = func(id string) bool { return states[id] == StateMerged }
	}
	var out []*Milestone
	for _, m := range p.Milestones {
		if !done(m.ID) && all(m.Depends, done) {
			out = append(out, m)
		}
	}
	return out
}

func all(ids []string, ok func(string) bool) bool {
	for _, id := range ids {
		if !ok(id) {
			return false
		}
	}
	return true
}
