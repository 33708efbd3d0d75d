package opencode

import (
	"fmt"
	"strings"

	"orcr/core"
	"orcr/core/wire"
)

// OpenCode reports its permission requests and questions through orcr's plugin, with
// their options; its TUI shows the permission as three choices, "Allow once",
// "Allow always", "Reject", picked with enter, a and esc (opencode 1.x TUI; not run
// here, so best effort — reference agent-clis.md §3e).
func permissionOptions() []wire.Option {
	return []wire.Option{
		{Label: "Allow once", Key: "enter", Meaning: wire.MeaningAllowOnce},
		{Label: "Allow always", Key: "a", Meaning: wire.MeaningAllowAlways},
		{Label: "Reject", Key: "esc", Meaning: wire.MeaningDeny},
	}
}

var _ core.Prompter = (*observer)(nil)

// Prompt implements core.Prompter: the prompt the plugin reported, while the screen
// still shows its choices.
func (o *observer) Prompt(s core.Screen) *wire.Blocked {
	b := o.blocked
	if o.state != wire.StateBlocked || b == nil || len(b.Options) == 0 {
		return nil
	}
	for _, op := range b.Options {
		if !strings.Contains(s.Text, op.Label) {
			return nil
		}
	}
	c := *b
	return &c
}

// AnswerSteps implements core.Prompter.
func (o *observer) AnswerSteps(shown *wire.Blocked, opt *wire.Option, text string) ([]core.AnswerStep, error) {
	if opt == nil {
		if shown.Kind == wire.BlockedQuestion {
			return []core.AnswerStep{{Text: text, Keys: []string{"enter"}}}, nil
		}
		return nil, fmt.Errorf("pick an option (--allow, --always, --deny, --option N)")
	}
	if text != "" {
		return nil, fmt.Errorf("option %q takes no text", opt.Label)
	}
	if len(opt.Key) > 1 {
		return []core.AnswerStep{{Keys: []string{opt.Key}}}, nil
	}
	return []core.AnswerStep{{Text: opt.Key}}, nil
}
