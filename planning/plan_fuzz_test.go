package planning_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"orcr/planning"
)

func FuzzParsePlan(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "plans", "*.md"))
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(basePlan))
	f.Add([]byte(replace("depends: -", "depends: M2")))
	f.Add([]byte("# Plan: x\n```\n## M1 · a\n"))
	f.Add([]byte("<!--\n# Plan: x\n"))
	f.Add([]byte(plan50()))
	cat := planning.Default()
	f.Fuzz(func(t *testing.T, src []byte) {
		opts := planning.Options{Catalog: cat}
		p, err := planning.Parse(src, opts)
		if p == nil {
			t.Fatal("Parse returned no plan")
		}
		if !bytes.Equal(p.Bytes(), src) {
			t.Fatal("Bytes differs from the parsed source")
		}
		again, err2 := planning.Parse(p.Bytes(), opts)
		if fmt.Sprint(err) != fmt.Sprint(err2) || !slices.Equal(milestoneIDs(p), milestoneIDs(again)) {
			t.Fatalf("parse(serialize(parse(x))) differs:\n%v\n---\n%v", err, err2)
		}
		if err != nil {
			if _, ok := err.(planning.Errors); !ok {
				t.Fatalf("error of type %T", err)
			}
			return
		}
		order, oerr := p.Order()
		if oerr != nil || len(order) != len(p.Milestones) {
			t.Fatalf("a valid plan has no order: %v", oerr)
		}
		placed := map[string]bool{}
		for _, m := range order {
			for _, d := range m.Depends {
				if !placed[d] {
					t.Fatalf("%s placed before its dependency %s", m.ID, d)
				}
			}
			placed[m.ID] = true
		}
		// A targeted edit keeps the plan valid, changes the one value and nothing else.
		m := p.Milestones[0]
		before := p.Bytes()
		if err := p.SetState(m.ID, "ready"); err != nil {
			t.Fatal(err)
		}
		edited, err := planning.Parse(p.Bytes(), opts)
		if err != nil {
			t.Fatalf("SetState broke the plan:\n%v\n%q", err, p.Bytes())
		}
		if edited.Milestone(m.ID).State != "ready" || !slices.Equal(milestoneIDs(edited), milestoneIDs(again)) {
			t.Fatalf("SetState: state %q, ids %v", edited.Milestone(m.ID).State, milestoneIDs(edited))
		}
		if removed, added := changedLines(before, p.Bytes()); len(removed) > 1 || len(added) != 1 {
			t.Fatalf("SetState changed more than one line: -%q +%q", removed, added)
		}
		for _, em := range edited.Milestones {
			if em.ID != m.ID && em.State != again.Milestone(em.ID).State {
				t.Fatalf("SetState of %s changed %s", m.ID, em.ID)
			}
		}
		if len(m.Checks) > 0 {
			if err := p.SetCheck(m.ID, 0, !m.Checks[0].Done); err != nil {
				t.Fatal(err)
			}
			if c := p.Milestone(m.ID).Checks; len(c) != len(m.Checks) || c[0].Done == m.Checks[0].Done {
				t.Fatalf("SetCheck: %+v", c)
			}
		}
	})
}

func milestoneIDs(p *planning.Plan) []string {
	var out []string
	for _, m := range p.Milestones {
		out = append(out, m.ID)
	}
	return out
}

// plan50 is a plan of 50 milestones shaped like a lead's: every key, a Goal with a list
// and a code block, three check boxes, each milestone depending on one or two earlier.
func plan50() string {
	var b strings.Builder
	b.WriteString("# Plan: big\nrequest: a large change in fifty steps\ncheck: go test ./...\nmode: worktree\n")
	tiers := planning.TierNames
	for i := 1; i <= 50; i++ {
		deps := "-"
		switch {
		case i > 2:
			deps = fmt.Sprintf("M%d, M%d", i-1, i/2)
		case i == 2:
			deps = "M1"
		}
		fmt.Fprintf(&b, "\n## M%d · Step %d of the change\ndepends: %s\ntier: %s\nneeds: go, sql\n", i, i, deps, tiers[i%3])
		fmt.Fprintf(&b, "model-why: step %d builds on the contract; a mistake here costs a redo\nestimate: %dm\n", i, 10+i)
		fmt.Fprintf(&b, "\n### Goal\nStep %d does one thing well.\n\n- it keeps the interface\n- it adds a test\n\n```go\n# comment\nfunc Step%d() {}\n```\n", i, i)
		fmt.Fprintf(&b, "\n### Acceptance\n- [ ] `go test ./step%d/...` passes\n- [ ] no new exported names\n- [x] reviewed\n", i)
	}
	return b.String()
}

func BenchmarkParsePlan50(b *testing.B) {
	src := []byte(plan50())
	cat := planning.Default()
	if p, err := planning.Parse(src, planning.Options{Catalog: cat}); err != nil || len(p.Milestones) != 50 {
		b.Fatalf("%v", err)
	}
	b.SetBytes(int64(len(src)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := planning.Parse(src, planning.Options{Catalog: cat}); err != nil {
			b.Fatal(err)
		}
	}
}
