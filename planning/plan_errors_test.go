package planning_test

import (
	"fmt"
	"strings"
	"testing"

	"orcr/planning"
)

// basePlan is valid; each case below breaks it in one way. Its line numbers:
//
//	1 title, 2 request, 3 check, 5 ## M1, 6 depends, 7 tier, 8 estimate, 10 ### Goal,
//	13 ### Acceptance, 16 ## M2, 17 depends, 18 tier, 20 ### Goal, 23 ### Acceptance
const basePlan = `# Plan: p
request: r
check: go test ./...

## M1 · One
depends: -
tier: high
estimate: 20m

### Goal
Do one.

### Acceptance
- [ ] one works

## M2 · Two
depends: M1
tier: medium

### Goal
Do two.

### Acceptance
- [ ] two works
`

func TestBasePlanIsValid(t *testing.T) {
	mustParse(t, []byte(basePlan))
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		opts planning.Options
		want []string // the whole error, one line per error, in order
	}{
		{"unknown header key", replace("check: go test ./...\n", "check: go test ./...\nowner: ana\n"), planning.Options{},
			[]string{`line 4: unknown key "owner" in the plan's header: keys are request, check, mode, premium`}},
		{"unknown milestone key", replace("tier: high\n", "tier: high\nprio: 1\n"), planning.Options{},
			[]string{`line 8: unknown key "prio" in milestone M1: keys are depends, tier, needs, model-why, estimate, model, state`}},
		{"unknown tier", replace("tier: medium", "tier: huge"), planning.Options{},
			[]string{`line 18: unknown tier "huge": tiers are small, medium, high`}},
		{"cycle", replace("depends: -", "depends: M2"), planning.Options{},
			[]string{"line 6: dependency cycle: M1 → M2 → M1"}},
		{"self cycle", replace("depends: M1", "depends: M2"), planning.Options{},
			[]string{"line 17: dependency cycle: M2 → M2"}},
		{"unknown dependency", replace("depends: M1", "depends: M1, M3"), planning.Options{},
			[]string{"line 17: milestone M2 depends on M3, which is not a milestone of this plan"}},
		{"duplicate id", replace("## M2 · Two", "## M1 · Two"), planning.Options{},
			[]string{"line 16: duplicate milestone id M1 (first at line 5)"}},
		{"no goal", replace("### Goal\nDo one.\n", ""), planning.Options{},
			[]string{"line 5: milestone M1 has no ### Goal section"}},
		{"empty acceptance", replace("- [ ] two works\n", "\n\n"), planning.Options{},
			[]string{"line 23: the ### Acceptance of milestone M2 is empty"}},
		{"no depends or tier", replace("depends: M1\ntier: medium\n", ""), planning.Options{},
			[]string{"line 16: milestone M2 has no `depends:` line (write `depends: -` when it depends on nothing)", "line 16: milestone M2 has no `tier:` line (small, medium, high)"}},
		{"premium without permission", replace("tier: high\n", "tier: high\nmodel: claude:claude-opus-5-5\n"), planning.Options{Catalog: planning.Default()},
			[]string{"line 8: model claude:claude-opus-5-5 is premium: add `premium: allowed` under the title to allow it, or name another model"}},
		{"premium with permission", replaceIn(replace("tier: high\n", "tier: high\nmodel: claude-opus-5-5\n"), "request: r\n", "request: r\npremium: allowed\n"),
			planning.Options{Catalog: planning.Default()}, nil},
		{"model not in catalog", replace("tier: medium\n", "tier: medium\nmodel: claude:gpt-9\n"), planning.Options{Catalog: planning.Default()},
			[]string{"line 19: model \"claude:gpt-9\" is not in the catalog (see `orcr catalog`)"}},
		{"model below tier", replace("tier: high\n", "tier: high\nmodel: claude:claude-haiku-4-5\n"), planning.Options{Catalog: planning.Default()},
			[]string{"line 8: model claude:claude-haiku-4-5 does not meet tier high (reasoning≥5 coding≥5 architecture≥5 planning≥5); it qualifies for small"}},
		{"missing header fields", replace("request: r\ncheck: go test ./...\n", ""), planning.Options{},
			[]string{"line 1: the plan has no `check:` line under its title", "line 1: the plan has no `request:` line under its title"}},
		{"no title", replace("# Plan: p\n", ""), planning.Options{},
			[]string{"line 1: a plan starts with its title, `# Plan: NAME`"}},
		{"wrong title", replace("# Plan: p", "# My plan"), planning.Options{},
			[]string{`line 1: the title must read ` + "`# Plan: NAME`" + `, not "# My plan"`}},
		{"name differs from the record", basePlan, planning.Options{Name: "q"},
			[]string{`line 1: this is plan "p", but the file belongs to plan "q"`}},
		{"file name in errors", replace("tier: medium", "tier: huge"), planning.Options{File: ".orcr/plans/p.md"},
			[]string{`.orcr/plans/p.md:18: unknown tier "huge": tiers are small, medium, high`}},
		{"bad values", replace("check: go test ./...\n", "check: go test ./...\nmode: parallel\npremium: yes\n"), planning.Options{},
			[]string{`line 4: mode "parallel": use worktree or shared`, `line 5: premium "yes": use allowed or no`}},
		{"bad estimate and state", replace("estimate: 20m\n", "estimate: two hours\nstate: done\n"), planning.Options{},
			[]string{`line 8: estimate "two hours": write a duration such as 20m or 1h30m`, `line 9: unknown milestone state "done": states are planned, ready, building, asking, checking, reviewing, merging, merged, fixing, benched, held, escalated, failed`}},
		{"repeated key", replace("tier: high\n", "tier: high\ntier: small\n"), planning.Options{},
			[]string{"line 8: milestone M1 has a second `tier:` line (first at line 7)"}},
		{"unclosed fence", replace("Do two.\n", "Do two.\n```go\nfunc x() {}\n"), planning.Options{},
			[]string{"line 16: milestone M2 has no ### Acceptance section", "line 22: code block opened here is never closed with ```"}},
		{"unknown section", replace("### Acceptance\n- [ ] two works\n", "### Acceptance\n- [ ] two works\n\n### Risks\nnone\n"), planning.Options{},
			[]string{`line 26: unknown section "### Risks" in milestone M2: sections are Goal, Acceptance, Notes`}},
		{"text among keys", replace("tier: high\n", "tier: high\nThis one is hard.\n"), planning.Options{},
			[]string{"line 8: expected a `key: value` line (depends, tier, needs, model-why, estimate, model, state) or a section heading `### Goal`"}},
		{"bad milestone heading", replace("## M2 · Two", "## Second part"), planning.Options{},
			[]string{"line 16: a milestone heading reads `## M1 · Title` (an id of letters, digits, '-', '_', then · or - and a title), not \"## Second part\""}},
		{"no milestones", "# Plan: p\nrequest: r\ncheck: c\n", planning.Options{},
			[]string{"line 1: the plan has no milestones: add `## M1 · Title` with its keys, ### Goal and ### Acceptance"}},
		{"several at once, sorted by line", replaceIn(replaceIn(replace("tier: medium", "tier: huge"), "depends: -", "depends: M2"), "check: go test ./...\n", "check: go test ./...\nowner: ana\n"), planning.Options{},
			[]string{`line 4: unknown key "owner" in the plan's header: keys are request, check, mode, premium`, "line 7: dependency cycle: M1 → M2 → M1", `line 19: unknown tier "huge": tiers are small, medium, high`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := planning.Parse([]byte(tc.src), tc.opts)
			if p == nil {
				t.Fatal("no plan returned")
			}
			if tc.want == nil {
				if err != nil {
					t.Fatalf("unexpected errors:\n%v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			if got, want := err.Error(), strings.Join(tc.want, "\n"); got != want {
				t.Fatalf("errors:\n%s\nwant:\n%s", got, want)
			}
			if string(p.Bytes()) != tc.src {
				t.Fatal("a plan with errors did not keep its source")
			}
		})
	}
}

// replace applies one edit to basePlan and fails loudly (at test-table build time) when
// the text to replace is not there, so a case can never silently test the base plan.
func replace(old, new string) string { return replaceIn(basePlan, old, new) }

func replaceIn(src, old, new string) string {
	if !strings.Contains(src, old) {
		panic(fmt.Sprintf("test plan has no %q", old))
	}
	return strings.Replace(src, old, new, 1)
}

func TestParseErrorsAreCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString("# Plan: p\nrequest: r\ncheck: c\n")
	for i := range 100 {
		fmt.Fprintf(&b, "bogus%d: x\n", i)
	}
	_, err := planning.Parse([]byte(b.String()), planning.Options{})
	es, ok := err.(planning.Errors)
	if !ok || len(es) != 31 || es[30].Msg != "71 more errors not shown" {
		t.Fatalf("%d errors, last %v", len(es), es[len(es)-1])
	}
}

// TestParseErrorCodes: each kind of bad input the issue names carries its stable code,
// so a client (and the lead's tooling) can tell them apart without reading messages.
func TestParseErrorCodes(t *testing.T) {
	cat := planning.Options{Catalog: planning.Default()}
	for _, tc := range []struct {
		name, src, code string
		opts            planning.Options
	}{
		{"cycle", replace("depends: -", "depends: M2"), planning.CodeDependencyCycle, planning.Options{}},
		{"unknown dependency", replace("depends: M1", "depends: M1, M3"), planning.CodeUnknownDependency, planning.Options{}},
		{"unknown tier", replace("tier: medium", "tier: huge"), planning.CodeUnknownTier, planning.Options{}},
		{"duplicate id", replace("## M2 · Two", "## M1 · Two"), planning.CodeDuplicateID, planning.Options{}},
		{"no goal", replace("### Goal\nDo one.\n", ""), planning.CodeMissingSection, planning.Options{}},
		{"empty acceptance", replace("- [ ] two works\n", "\n\n"), planning.CodeMissingSection, planning.Options{}},
		{"unknown key", replace("tier: high\n", "tier: high\nprio: 1\n"), planning.CodeUnknownKey, planning.Options{}},
		{"premium", replace("tier: high\n", "tier: high\nmodel: claude:claude-opus-5-5\n"), planning.CodePremiumModel, cat},
		{"heading", replace("## M2 · Two", "## Second part"), planning.CodeSyntax, planning.Options{}},
	} {
		_, err := planning.Parse([]byte(tc.src), tc.opts)
		es, ok := err.(planning.Errors)
		if !ok || len(es) == 0 {
			t.Errorf("%s: no errors (%v)", tc.name, err)
			continue
		}
		if es[0].Code != tc.code {
			t.Errorf("%s: code %q, want %q (%v)", tc.name, es[0].Code, tc.code, es[0])
		}
	}
}
