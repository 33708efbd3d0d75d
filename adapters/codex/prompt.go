package codex

import (
	"fmt"
	"strings"

	"orcr/adapters/internal/agentkit"
	"orcr/core"
	"orcr/core/wire"
)

// Codex 0.171 draws an approval as a question, the command, and a numbered menu whose
// options carry a one-key shortcut (reference agent-clis.md §2e, seen here):
//
//	Would you like to run the following command?
//	  $ rm -rf build
//	› 1. Yes, proceed (y)
//	  2. Yes, and don't ask again for commands that start with `rm -rf build` (p)
//	  3. No, and tell Codex what to do differently (esc)
//	Press enter to confirm or esc to cancel
var codexQuestions = []string{"Would you like to run the following command?", "Would you like to make the following edits?",
	"Would you like to", "Do you want to"}

var _ core.Prompter = (*observer)(nil)

// Prompt implements core.Prompter.
func (o *observer) Prompt(s core.Screen) *wire.Blocked { return parsePrompt(s.Text) }

// parsePrompt reads codex's approval menu off a screen.
func parsePrompt(text string) *wire.Blocked {
	m := agentkit.ParseMenu(text, true)
	if m == nil {
		return nil
	}
	lines := strings.Split(text, "\n")
	question := ""
	for i := m.First - 1; i >= 0 && i >= m.First-30 && question == ""; i-- {
		t := strings.TrimSpace(lines[i])
		for _, q := range codexQuestions {
			if strings.HasPrefix(t, q) {
				question = t
				break
			}
		}
	}
	if question == "" {
		return nil
	}
	b := &wire.Blocked{Kind: wire.BlockedPermission, Question: question, Options: m.Options()}
	switch {
	case strings.Contains(question, "run the following command"):
		if c := runCmdRE().FindStringSubmatch(text); c != nil {
			b.Detail = "Bash(" + strings.TrimSpace(c[1]) + ")"
		}
	case strings.Contains(question, "edits"):
		b.Detail = "Edit"
	default:
		b.Kind, b.Detail = wire.BlockedQuestion, question
	}
	if b.Detail == "" {
		b.Detail = question
	}
	for i, op := range b.Options {
		// Refusing drops back to the prompt, where what to do instead is typed.
		if op.Meaning == wire.MeaningDeny && strings.Contains(strings.ToLower(op.Label), "tell codex") {
			b.Options[i].Text = true
		}
	}
	return b
}

// AnswerSteps implements core.Prompter.
func (o *observer) AnswerSteps(shown *wire.Blocked, opt *wire.Option, text string) ([]core.AnswerStep, error) {
	if opt == nil {
		return nil, fmt.Errorf("codex shows a menu: pick an option (--allow, --deny, --option N)")
	}
	press := core.AnswerStep{Text: opt.Key}
	if len(opt.Key) > 1 {
		press = core.AnswerStep{Keys: []string{opt.Key}}
	}
	if text == "" {
		return []core.AnswerStep{press}, nil
	}
	if !opt.Text {
		return nil, fmt.Errorf("option %q takes no text", opt.Label)
	}
	f := strings.Fields(text)
	last := text
	if len(f) > 0 {
		last = f[len(f)-1]
	}
	press.Until = func(s string) bool { return parsePrompt(s) == nil && strings.Contains(s, "›") }
	return []core.AnswerStep{press,
		{Text: text, Until: func(s string) bool { return strings.Contains(s, last) }},
		{Keys: []string{"enter"}}}, nil
}
