package planning

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"orcr/internal/gitref"
)

// maxPlanErrors caps how many errors one parse reports: past a few dozen the file is
// not a plan at all, and the lead's next prompt should stay readable.
const maxPlanErrors = 30

var (
	reMilestone = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^([A-Za-z0-9][A-Za-z0-9_-]*)[ \t]*(?:·|—|–|-|:)[ \t]*(.*)$`)
	})
	rePlanName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`) })
)

// Parse reads a plan. It always returns a plan (what could be read, for display and for
// Bytes); the error, when not nil, is Errors: every problem found, sorted by line.
func Parse(src []byte, opts Options) (*Plan, error) {
	ps := &planParser{
		p:    &Plan{src: src, opts: opts, Mode: "worktree"},
		errs: &errorList{file: opts.File},
	}
	ps.split()
	ps.run()
	ps.finish()
	ps.validate()
	list := ps.errs.err()
	if list == nil {
		return ps.p, nil
	}
	errs := list.(Errors)
	if len(errs) > maxPlanErrors {
		last := errs[maxPlanErrors-1].Line
		errs = append(errs[:maxPlanErrors:maxPlanErrors], LineError{File: opts.File, Line: last,
			Msg: fmt.Sprintf("%d more errors not shown", len(errs)-maxPlanErrors), Code: CodeSyntax})
	}
	return ps.p, errs
}

type zone int

const (
	zonePreamble zone = iota // before the title
	zoneHeader               // the plan's keys
	zoneKeys                 // a milestone's keys
	zoneSection              // inside ### Goal / Acceptance / Notes (or an unknown one)
)

type planParser struct {
	p    *Plan
	errs *errorList

	zone      zone
	cur       *Milestone
	section   *Section // the section being read; nil inside an unknown one
	body      []string // its lines so far
	preambled bool     // the preamble error was reported
}

func (ps *planParser) split() {
	src := ps.p.src
	ps.p.lines = make([]srcLine, 0, bytes.Count(src, []byte{'\n'})+1)
	str := string(src) // one copy; every line's text is a slice of it
	for start := 0; start < len(src); {
		end := start
		for end < len(src) && src[end] != '\n' {
			end++
		}
		text := str[start:end]
		next := end
		if end < len(src) {
			next = end + 1
		}
		text = strings.TrimSuffix(text, "\r")
		ps.p.lines = append(ps.p.lines, srcLine{text: text, start: start, end: next})
		start = next
	}
}

func (ps *planParser) run() {
	lines := ps.p.lines
	for i := 0; i < len(lines); i++ {
		n, text := i+1, lines[i].text
		// HTML comments: skipped in key zones, content in sections; either way a heading
		// inside one is not a heading.
		if t := strings.TrimSpace(text); strings.HasPrefix(t, "<!--") {
			end := i
			if !strings.Contains(t[4:], "-->") {
				for end++; end < len(lines) && !strings.Contains(lines[end].text, "-->"); end++ {
				}
			}
			if end == len(lines) {
				ps.errs.add(n, "HTML comment is never closed with -->")
				end = len(lines) - 1
			}
			for j := i; j <= end; j++ {
				ps.content(j+1, lines[j].text)
			}
			i = end
			continue
		}
		if marker := fenceOpen(text); marker != "" {
			end := i + 1
			for end < len(lines) && !fenceCloses(lines[end].text, marker) {
				end++
			}
			if end == len(lines) {
				ps.errs.add(n, "code block opened here is never closed with %s", marker)
				end = len(lines) - 1
			}
			if ps.zone == zoneSection {
				for j := i; j <= end; j++ {
					ps.content(j+1, lines[j].text)
				}
			} else {
				ps.unexpected(n, text)
			}
			i = end
			continue
		}
		level, htext := heading(text)
		switch {
		case level == 1:
			ps.title(n, htext)
		case level == 2:
			ps.milestone(n, htext)
		case level == 3:
			ps.startSection(n, htext)
		default:
			ps.line(n, text)
		}
	}
}

// content is a line inside a section (or a comment elsewhere, which is dropped).
func (ps *planParser) content(n int, text string) {
	if ps.zone != zoneSection {
		return
	}
	if ps.section == nil {
		return // an unknown section, already reported
	}
	ps.body = append(ps.body, text)
	if ps.section == &ps.cur.Acceptance {
		if box, ok := checkBox(text); ok {
			ps.cur.Checks = append(ps.cur.Checks, Check{
				Line: n, Done: text[box] != ' ', Text: strings.TrimSpace(text[box+2:]), box: box,
			})
		}
	}
}

func (ps *planParser) unexpected(n int, text string) {
	switch ps.zone {
	case zonePreamble:
		if !ps.preambled {
			ps.errs.add(n, "a plan starts with its title, `# Plan: NAME`")
			ps.preambled = true
		}
	case zoneHeader:
		ps.errs.add(n, "expected a `key: value` line (%s) or a milestone heading `## M1 · Title`", strings.Join(headerKeys, ", "))
	case zoneKeys:
		ps.errs.add(n, "expected a `key: value` line (%s) or a section heading `### Goal`", strings.Join(milestoneKeys, ", "))
	}
}

// line is a line that is neither a fence, a comment nor a level 1–3 heading.
func (ps *planParser) line(n int, text string) {
	if ps.zone == zoneSection {
		ps.content(n, text)
		return
	}
	if strings.TrimSpace(text) == "" {
		return
	}
	if ps.zone == zonePreamble {
		ps.unexpected(n, text)
		return
	}
	keyEnd, colon, ok := keyLine(text)
	if !ok {
		ps.unexpected(n, text)
		return
	}
	raw := text[colon+1:]
	value := strings.TrimSpace(raw)
	at := colon + 1 + (len(raw) - len(strings.TrimLeft(raw, " \t")))
	f := Field{Key: strings.ToLower(text[:keyEnd]), Value: value, Line: n, valueAt: at, valueEnd: at + len(value)}
	if ps.zone == zoneHeader {
		ps.headerField(f)
	} else {
		ps.milestoneField(f)
	}
}

func (ps *planParser) title(n int, text string) {
	if ps.p.TitleLine != 0 {
		ps.errs.add(n, "a plan has one title (`# Plan: NAME`, at line %d); use ## for milestones and ### for sections", ps.p.TitleLine)
		return
	}
	ps.endSection()
	if ps.cur != nil || ps.zone != zonePreamble {
		ps.errs.add(n, "the title `# Plan: NAME` must come before the milestones")
	}
	ps.p.TitleLine = n
	ps.zone = zoneHeader
	name, ok := cutFold(text, "plan:")
	name = strings.TrimSpace(name)
	switch {
	case !ok:
		ps.errs.add(n, "the title must read `# Plan: NAME`, not %q", "# "+text)
	case name == "":
		ps.errs.add(n, "the title names no plan: `# Plan: NAME`")
	case !rePlanName().MatchString(name):
		ps.errs.add(n, "plan name %q: use lower-case letters, digits, '.', '_' and '-'", name)
	case gitref.CheckBranch(name) != nil:
		ps.errs.add(n, "plan name %q: git cannot use it in a branch name: %v; pick another name", name, gitref.CheckBranch(name))
	case ps.p.opts.Name != "" && name != ps.p.opts.Name:
		ps.errs.add(n, "this is plan %q, but the file belongs to plan %q", name, ps.p.opts.Name)
	}
	ps.p.Name = name
}

func (ps *planParser) milestone(n int, text string) {
	ps.endSection()
	ps.endMilestone()
	if ps.p.TitleLine == 0 && !ps.preambled {
		ps.errs.add(n, "a plan starts with its title, `# Plan: NAME`, before the milestones")
		ps.preambled = true
	}
	m := &Milestone{Line: n}
	ps.cur, ps.zone = m, zoneKeys
	sm := reMilestone().FindStringSubmatch(text)
	if sm == nil {
		ps.errs.add(n, "a milestone heading reads `## M1 · Title` (an id of letters, digits, '-', '_', then · or - and a title), not %q", "## "+text)
		m.ID = text
		ps.p.Milestones = append(ps.p.Milestones, m)
		return
	}
	m.ID, m.Title = sm[1], strings.TrimSpace(sm[2])
	if m.Title == "" {
		ps.errs.add(n, "milestone %s has no title: `## %s · Title`", m.ID, m.ID)
	}
	if len(m.ID) > 32 {
		ps.errs.add(n, "milestone id %q is longer than 32 characters", m.ID)
	}
	for _, o := range ps.p.Milestones {
		if o.ID == m.ID {
			ps.errs.addc(n, CodeDuplicateID, "duplicate milestone id %s (first at line %d)", m.ID, o.Line)
			break
		}
	}
	ps.p.Milestones = append(ps.p.Milestones, m)
}

func (ps *planParser) startSection(n int, text string) {
	ps.endSection()
	if ps.cur == nil {
		ps.errs.add(n, "section %q is outside a milestone: add `## M1 · Title` above it", "### "+text)
		ps.zone, ps.section = zoneSection, nil
		return
	}
	ps.zone = zoneSection
	idx := slices.IndexFunc(sectionNames, func(s string) bool { return strings.EqualFold(s, text) })
	if idx < 0 {
		ps.errs.addc(n, CodeUnknownKey, "unknown section %q in milestone %s: sections are %s", "### "+text, ps.cur.ID, strings.Join(sectionNames, ", "))
		ps.section = nil
		return
	}
	s := [...]*Section{&ps.cur.Goal, &ps.cur.Acceptance, &ps.cur.Notes}[idx]
	if s.Line != 0 {
		ps.errs.add(n, "milestone %s has a second ### %s (first at line %d)", ps.cur.ID, sectionNames[idx], s.Line)
		ps.section = nil
		return
	}
	s.Line = n
	ps.section, ps.body = s, nil
}

func (ps *planParser) endSection() {
	if ps.section != nil {
		start, end := 0, len(ps.body)
		for start < end && strings.TrimSpace(ps.body[start]) == "" {
			start++
		}
		for end > start && strings.TrimSpace(ps.body[end-1]) == "" {
			end--
		}
		ps.section.Text = strings.Join(ps.body[start:end], "\n")
	}
	ps.section, ps.body = nil, nil
}

func (ps *planParser) endMilestone() {
	m := ps.cur
	if m == nil {
		return
	}
	ps.cur = nil
	if _, ok := m.Field("depends"); !ok {
		ps.errs.addc(m.Line, CodeMissingKey, "milestone %s has no `depends:` line (write `depends: -` when it depends on nothing)", m.ID)
	}
	if _, ok := m.Field("tier"); !ok {
		ps.errs.addc(m.Line, CodeMissingKey, "milestone %s has no `tier:` line (%s)", m.ID, strings.Join(TierNames, ", "))
	}
	for _, s := range []struct {
		name string
		sec  Section
	}{{"Goal", m.Goal}, {"Acceptance", m.Acceptance}} {
		switch {
		case s.sec.Line == 0:
			ps.errs.addc(m.Line, CodeMissingSection, "milestone %s has no ### %s section", m.ID, s.name)
		case strings.TrimSpace(s.sec.Text) == "":
			ps.errs.addc(s.sec.Line, CodeMissingSection, "the ### %s of milestone %s is empty", s.name, m.ID)
		}
	}
}

func (ps *planParser) finish() {
	ps.endSection()
	ps.endMilestone()
	p := ps.p
	if p.TitleLine == 0 {
		if !ps.preambled {
			ps.errs.add(1, "a plan starts with its title, `# Plan: NAME`")
		}
		return
	}
	for _, k := range []string{"request", "check"} {
		if !slices.ContainsFunc(p.Header, func(f Field) bool { return f.Key == k }) {
			ps.errs.addc(p.TitleLine, CodeMissingKey, "the plan has no `%s:` line under its title", k)
		}
	}
	if len(p.Milestones) == 0 {
		ps.errs.add(p.TitleLine, "the plan has no milestones: add `## M1 · Title` with its keys, ### Goal and ### Acceptance")
	}
}

func (ps *planParser) headerField(f Field) {
	p := ps.p
	if !ps.firstField(p.Header, f, "the plan") {
		return
	}
	p.Header = append(p.Header, f)
	switch f.Key {
	case "request":
		p.Request = f.Value
		if f.Value == "" {
			ps.errs.addc(f.Line, CodeMissingKey, "request is empty: say what the plan is for")
		}
	case "check":
		p.Check = f.Value
		if f.Value == "" {
			ps.errs.addc(f.Line, CodeMissingKey, "check is empty: name the command that proves a milestone works (e.g. `go test ./...`)")
		}
	case "mode":
		p.Mode = f.Value
		if f.Value != "worktree" && f.Value != "shared" {
			ps.errs.addc(f.Line, CodeBadValue, "mode %q: use worktree or shared", f.Value)
		}
	case "premium":
		switch strings.ToLower(f.Value) {
		case "allowed":
			p.Premium = true
		case "no":
		default:
			ps.errs.addc(f.Line, CodeBadValue, "premium %q: use allowed or no", f.Value)
		}
	default:
		ps.errs.addc(f.Line, CodeUnknownKey, "unknown key %q in the plan's header: keys are %s", f.Key, strings.Join(headerKeys, ", "))
	}
}

// firstField reports a repeated key and tells the caller to skip it.
func (ps *planParser) firstField(have []Field, f Field, where string) bool {
	for _, o := range have {
		if o.Key == f.Key {
			ps.errs.add(f.Line, "%s has a second `%s:` line (first at line %d)", where, f.Key, o.Line)
			return false
		}
	}
	return true
}

func (ps *planParser) milestoneField(f Field) {
	m := ps.cur
	if !ps.firstField(m.Fields, f, "milestone "+m.ID) {
		return
	}
	m.Fields = append(m.Fields, f)
	switch f.Key {
	case "depends":
		v := f.Value
		if v == "-" || strings.EqualFold(v, "none") {
			return
		}
		if v == "" {
			ps.errs.addc(f.Line, CodeMissingKey, "depends is empty: write `depends: -` for none or list milestone ids")
			return
		}
		for _, d := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' }) {
			if !slices.Contains(m.Depends, d) {
				m.Depends = append(m.Depends, d)
			}
		}
	case "tier":
		m.Tier = f.Value
		if !slices.Contains(TierNames, f.Value) {
			ps.errs.addc(f.Line, CodeUnknownTier, "unknown tier %q: tiers are %s", f.Value, strings.Join(TierNames, ", "))
		}
	case "needs":
		if f.Value != "-" {
			for _, s := range strings.Split(f.Value, ",") {
				if s = strings.TrimSpace(s); s != "" {
					m.Needs = append(m.Needs, s)
				}
			}
		}
	case "model-why":
		m.ModelWhy = f.Value
	case "estimate":
		d, err := time.ParseDuration(f.Value)
		if err != nil || d <= 0 {
			ps.errs.addc(f.Line, CodeBadValue, "estimate %q: write a duration such as 20m or 1h30m", f.Value)
		}
		m.Estimate = d
	case "model":
		m.Model = f.Value
		if f.Value == "" {
			ps.errs.addc(f.Line, CodeMissingKey, "model is empty: name a catalog model as provider:id, or drop the line")
		}
	case "state":
		m.State = f.Value
		if !slices.Contains(MilestoneStates, f.Value) {
			ps.errs.addc(f.Line, CodeBadValue, "unknown milestone state %q: states are %s", f.Value, strings.Join(MilestoneStates, ", "))
		}
	default:
		ps.errs.addc(f.Line, CodeUnknownKey, "unknown key %q in milestone %s: keys are %s", f.Key, m.ID, strings.Join(milestoneKeys, ", "))
	}
}
