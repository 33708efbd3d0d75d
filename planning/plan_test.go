package planning_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"orcr/planning"
)

func readPlan(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "plans", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func mustParse(t *testing.T, src []byte) *planning.Plan {
	t.Helper()
	p, err := planning.Parse(src, planning.Options{Catalog: planning.Default()})
	if err != nil {
		t.Fatalf("parse:\n%v", err)
	}
	return p
}

func TestParseDesignExample(t *testing.T) {
	p := mustParse(t, readPlan(t, "design.md"))
	if p.Name != "csv-import" || p.Request != "import CSV files into the contacts table" || p.Check != "go test ./..." || p.Mode != "worktree" || p.Premium {
		t.Errorf("header %+v", p)
	}
	if len(p.Milestones) != 1 {
		t.Fatalf("%d milestones", len(p.Milestones))
	}
	m := p.Milestones[0]
	if m.ID != "M1" || m.Title != "Shared types for the importer" || m.Line != 6 || len(m.Depends) != 0 ||
		m.Tier != "high" || !slices.Equal(m.Needs, []string{"go"}) || m.Estimate != 20*time.Minute ||
		m.ModelWhy != "the contract M2 and M3 build on; a wrong design here is expensive" {
		t.Errorf("milestone %+v", m)
	}
	if m.Goal.Text != "One Go type for an imported row and one interface for a row sink." || m.Goal.Line != 13 {
		t.Errorf("goal %+v", m.Goal)
	}
	if len(m.Checks) != 1 || m.Checks[0].Done || m.Checks[0].Text != "`go test ./import/...` passes" || m.Checks[0].Line != 17 {
		t.Errorf("checks %+v", m.Checks)
	}
}

func TestRoundTripHandEdited(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "plans", "*.md"))
	if len(files) < 4 {
		t.Fatalf("only %d plans in testdata", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src := readPlan(t, filepath.Base(f))
			p := mustParse(t, src)
			if !bytes.Equal(p.Bytes(), src) {
				t.Fatal("an unchanged plan did not serialize byte-identical")
			}
			if p.Hash() != planning.HashBytes(src) {
				t.Fatal("hash is not of the file's bytes")
			}
		})
	}
}

func TestEditedPlanReadsWhatAPersonWrote(t *testing.T) {
	p := mustParse(t, readPlan(t, "edited.md"))
	if p.Name != "csv-import" || !p.Premium || p.Check != "go test ./..." || len(p.Milestones) != 3 {
		t.Fatalf("plan %+v", p)
	}
	m1, m2, m3 := p.Milestones[0], p.Milestones[1], p.Milestones[2]
	for _, want := range []string{"# not a heading", "## M9 · not a milestone either", "nested items", "#### A deeper heading", "| name   | text |"} {
		if !strings.Contains(m1.Goal.Text, want) {
			t.Errorf("goal of M1 lost %q:\n%s", want, m1.Goal.Text)
		}
	}
	if !strings.HasPrefix(m1.Goal.Text, "One Go type") || !strings.HasSuffix(m1.Goal.Text, "| name   | text |") {
		t.Errorf("goal of M1 is not trimmed of blank lines: %q", m1.Goal.Text)
	}
	if len(m1.Checks) != 3 || !m1.Checks[0].Done || m1.Checks[1].Done || m1.Checks[2].Text != "star bullets count too" {
		t.Errorf("checks of M1 %+v", m1.Checks)
	}
	if m2.Title != "CSV parser" || m2.State != "building" || m2.Model != "codex:gpt-5.3-codex" || !strings.Contains(m2.Acceptance.Text, "# a tilde fence") || m2.Notes.Text != "> Ana: watch out for BOMs." {
		t.Errorf("M2 %+v", m2)
	}
	if m3.Title != "Contacts sink" || !slices.Equal(m3.Depends, []string{"M1", "M2"}) || m3.Estimate != 90*time.Minute || !slices.Equal(m3.Needs, []string{"go", "sql"}) {
		t.Errorf("M3 %+v", m3)
	}
	if p.Milestone("M7") != nil {
		t.Error("a milestone inside an HTML comment was read")
	}
}

// diffLines returns the lines of b that differ from a, for edits that keep the line count
// or insert one line.
func changedLines(a, b []byte) (removed, added []string) {
	al, bl := strings.SplitAfter(string(a), "\n"), strings.SplitAfter(string(b), "\n")
	i := 0
	for i < len(al) && i < len(bl) && al[i] == bl[i] {
		i++
	}
	j, k := len(al), len(bl)
	for j > i && k > i && al[j-1] == bl[k-1] {
		j--
		k--
	}
	return al[i:j], bl[i:k]
}

func TestEditsAreTargetedLineChanges(t *testing.T) {
	src := readPlan(t, "edited.md")
	p := mustParse(t, src)

	if err := p.SetState("M1", "ready"); err != nil {
		t.Fatal(err)
	}
	removed, added := changedLines(src, p.Bytes())
	if len(removed) != 0 || !slices.Equal(added, []string{"state: ready\n"}) {
		t.Fatalf("SetState without a state line: removed %q added %q", removed, added)
	}
	if p.Milestone("M1").State != "ready" {
		t.Fatal("the plan was not re-read after the edit")
	}
	// The state line goes after the milestone's last key, before its sections.
	if f, _ := p.Milestone("M1").Field("state"); f.Line != p.Milestone("M1").Fields[len(p.Milestone("M1").Fields)-2].Line+1 {
		t.Errorf("state line at %d", f.Line)
	}

	before := p.Bytes()
	if err := p.SetState("M2", "merged"); err != nil {
		t.Fatal(err)
	}
	removed, added = changedLines(before, p.Bytes())
	if !slices.Equal(removed, []string{"state: building\n"}) || !slices.Equal(added, []string{"state: merged\n"}) {
		t.Fatalf("SetState over a state line: removed %q added %q", removed, added)
	}

	before = p.Bytes()
	if err := p.SetCheck("M1", 0, false); err != nil {
		t.Fatal(err)
	}
	if err := p.SetCheck("M1", 2, true); err != nil {
		t.Fatal(err)
	}
	removed, added = changedLines(before, p.Bytes())
	if len(removed) != 3 || added[0] != "- [ ] `go test ./import/...` passes\n" || added[2] != "* [x] star bullets count too\n" {
		t.Fatalf("SetCheck: removed %q added %q", removed, added)
	}
	if m := p.Milestone("M1"); m.Checks[0].Done || !m.Checks[2].Done {
		t.Errorf("checks after edit %+v", m.Checks)
	}
	if _, err := planning.Parse(p.Bytes(), planning.Options{Catalog: planning.Default()}); err != nil {
		t.Fatalf("edited plan no longer parses: %v", err)
	}

	for _, err := range []error{p.SetState("M9", "ready"), p.SetState("M1", "done"), p.SetCheck("M1", 3, true), p.SetCheck("M9", 0, true)} {
		if err == nil {
			t.Error("a bad edit was accepted")
		}
	}
}

func TestEditsKeepCRLFAndMissingFinalNewline(t *testing.T) {
	src := readPlan(t, "crlf-no-final-newline.md")
	p := mustParse(t, src)
	if p.Milestones[0].Goal.Text != `The README says "teh"; it should say "the".` {
		t.Errorf("goal %q (a \\r left in?)", p.Milestones[0].Goal.Text)
	}
	if err := p.SetState("M1", "merged"); err != nil {
		t.Fatal(err)
	}
	if err := p.SetCheck("M1", 0, true); err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(string(src), "tier: small\r\n", "tier: small\r\nstate: merged\r\n", 1)
	want = strings.Replace(want, `- [ ] grep`, `- [x] grep`, 1)
	if string(p.Bytes()) != want {
		t.Fatalf("got %q\nwant %q", p.Bytes(), want)
	}
}

func TestOrderAndReady(t *testing.T) {
	p := mustParse(t, readPlan(t, "wide.md"))
	order, err := p.Order()
	if err != nil {
		t.Fatal(err)
	}
	ids := func(ms []*planning.Milestone) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.ID)
		}
		return out
	}
	if got := ids(order); !slices.Equal(got, []string{"C1", "A", "B", "Z"}) {
		t.Errorf("order %v", got)
	}
	doneOf := func(done ...string) func(string) bool {
		return func(id string) bool { return slices.Contains(done, id) }
	}
	for _, tc := range []struct {
		done, want []string
	}{
		{nil, []string{"C1"}},
		{[]string{"C1"}, []string{"A", "B"}},
		{[]string{"C1", "B"}, []string{"A"}},
		{[]string{"C1", "A", "B"}, []string{"Z"}},
		{[]string{"C1", "A", "B", "Z"}, nil},
	} {
		if got := ids(p.Ready(doneOf(tc.done...))); !slices.Equal(got, tc.want) {
			t.Errorf("done %v: ready %v, want %v", tc.done, got, tc.want)
		}
	}
	// By default "done" is the state the run writes into the file.
	if err := p.SetState("C1", "merged"); err != nil {
		t.Fatal(err)
	}
	if got := ids(p.Ready(nil)); !slices.Equal(got, []string{"A", "B"}) {
		t.Errorf("ready from states: %v", got)
	}
	// A milestone listed before what it depends on still comes after it.
	q := mustParse(t, []byte(
		"# Plan: q\nrequest: r\ncheck: c\n\n## B · b\ndepends: A\ntier: small\n### Goal\ng\n### Acceptance\na\n\n## A · a\ndepends: -\ntier: small\n### Goal\ng\n### Acceptance\na\n"))
	order, err = q.Order()
	if err != nil || !slices.Equal(ids(order), []string{"A", "B"}) {
		t.Errorf("order %v, %v", ids(order), err)
	}
}
