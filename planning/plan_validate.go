package planning

import (
	"slices"
	"strings"
)

// validate checks what needs the whole plan: dependencies and catalog models.
func (ps *planParser) validate() {
	p := ps.p
	ids := map[string]*Milestone{}
	for _, m := range p.Milestones {
		if _, dup := ids[m.ID]; !dup {
			ids[m.ID] = m
		}
	}
	for _, m := range p.Milestones {
		f, _ := m.Field("depends")
		for _, d := range m.Depends {
			if _, ok := ids[d]; !ok {
				ps.errs.addc(f.Line, CodeUnknownDependency, "milestone %s depends on %s, which is not a milestone of this plan", m.ID, d)
			}
		}
	}
	ps.cycles(ids)
	if c := p.opts.Catalog; c != nil {
		for _, m := range p.Milestones {
			if m.Model == "" {
				continue
			}
			f, _ := m.Field("model")
			model, err := c.Lookup(m.Model)
			if err != nil {
				ps.errs.addc(f.Line, CodeUnknownModel, "%v", err)
				continue
			}
			if model.Premium && !p.Premium {
				ps.errs.addc(f.Line, CodePremiumModel, "model %s is premium: add `premium: allowed` under the title to allow it, or name another model", model.Ref())
			}
			if t, ok := c.Tier(m.Tier); ok && !Meets(model, t) {
				ps.errs.addc(f.Line, CodeModelBelowTier, "model %s does not meet tier %s (%s); it qualifies for %s", model.Ref(), t.Name, t, orDash(c.Qualifies(model)))
			}
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "no tier"
	}
	return s
}

// cycles reports each dependency cycle once, at the depends line of its first
// milestone in file order, naming the whole loop.
func (ps *planParser) cycles(ids map[string]*Milestone) {
	const (
		unseen = iota
		active
		finished
	)
	color := map[string]int{}
	var stack []string
	var visit func(id string)
	visit = func(id string) {
		color[id] = active
		stack = append(stack, id)
		for _, d := range ids[id].Depends {
			if _, ok := ids[d]; !ok {
				continue
			}
			switch color[d] {
			case unseen:
				visit(d)
			case active:
				loop := slices.Clone(stack[slices.Index(stack, d):])
				ps.reportCycle(ids, loop)
			}
		}
		stack = stack[:len(stack)-1]
		color[id] = finished
	}
	for _, m := range ps.p.Milestones {
		if ids[m.ID] == m && color[m.ID] == unseen {
			visit(m.ID)
		}
	}
}

func (ps *planParser) reportCycle(ids map[string]*Milestone, loop []string) {
	// Start the loop at its milestone that comes first in the file, so the message
	// and its line do not depend on where the search happened to enter it.
	first := 0
	for i, id := range loop {
		if ids[id].Line < ids[loop[first]].Line {
			first = i
		}
	}
	loop = append(loop[first:], loop[:first]...)
	// The search walks "depends on" edges, so loop[i] depends on loop[i+1].
	f, _ := ids[loop[0]].Field("depends")
	ps.errs.addc(f.Line, CodeDependencyCycle, "dependency cycle: %s → %s", strings.Join(loop, " → "), loop[0])
}
