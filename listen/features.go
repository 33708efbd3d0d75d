package listen

import "fmt"

// Features says which actions this orcr can carry out. A listener naming one it
// cannot is refused at load, with the line, rather than failing at every event.
type Features struct {
	Roles bool // [action] role = (agent roles, DESIGN §12)
	Plans bool // [action] plan = (plans, DESIGN §8)
}

// ParseFor parses a document and refuses the actions f does not offer.
func ParseFor(name string, data []byte, f Features) (Listener, error) {
	l, err := Parse(name, data)
	if err != nil {
		return l, err
	}
	lines := indexLines(string(data))
	switch {
	case l.Action.IsPlan() && !f.Plans:
		return Listener{}, &ParseError{Name: name, Line: lines.line("action.plan"),
			Msg: "plan = …: plans are not available yet in this orcr; spawn an agent instead (path, prompt and provider)"}
	case l.Action.Role != "" && !f.Roles:
		return Listener{}, &ParseError{Name: name, Line: lines.line("action.role"),
			Msg: fmt.Sprintf("role = %q: roles are not available yet in this orcr; give provider = \"claude\" (and model = …) instead", l.Action.Role)}
	}
	return l, nil
}
