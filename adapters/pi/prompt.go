package pi

import (
	"fmt"

	"orcr/adapters/internal/agentkit"
	"orcr/core"
	"orcr/core/wire"
)

// Pi asks nothing by itself (no permission prompts by design); its project-trust
// dialog and extensions' dialogs are select lists with a cursor, moved with the arrows
// and confirmed with enter. Best effort: read any such list off the screen.

var _ core.Prompter = (*observer)(nil)

// Prompt implements core.Prompter.
func (o *observer) Prompt(s core.Screen) *wire.Blocked {
	m := agentkit.ParseMenu(s.Text, true)
	if m == nil {
		return nil
	}
	o.menu = m
	kind := wire.BlockedQuestion
	if o.blocked != nil && o.blocked.Kind == wire.BlockedDialog {
		kind = wire.BlockedDialog
	}
	return &wire.Blocked{Kind: kind, Detail: m.Question, Question: m.Question, Options: m.Options()}
}

// AnswerSteps implements core.Prompter: move the cursor to the option, press enter.
func (o *observer) AnswerSteps(shown *wire.Blocked, opt *wire.Option, text string) ([]core.AnswerStep, error) {
	if opt == nil || text != "" {
		return nil, fmt.Errorf("pi shows a list: pick an option (--option N)")
	}
	idx := -1
	for i, op := range shown.Options {
		if op == *opt {
			idx = i
		}
	}
	if idx < 0 || o.menu == nil {
		return nil, fmt.Errorf("option %q is not on screen", opt.Label)
	}
	keys := append(agentkit.MoveKeys(max(0, o.menu.Selected()), idx), "enter")
	return []core.AnswerStep{{Keys: keys}}, nil
}
