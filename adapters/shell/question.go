package shell

import (
	"fmt"
	"regexp"
	"strings"
	"sync"

	"orcr/adapters/internal/agentkit"
	"orcr/core"
	"orcr/core/wire"
)

// A plain program asks by printing a question and reading a line. On a settled screen
// the shell adapter recognises (DESIGN §7):
//
//	Proceed? [y/N]            a yes/no question in brackets or parentheses at the end
//	Continue (yes/no)?        of the last line, with nothing typed after it
//	QUESTION: which branch?   a line starting QUESTION:, with at most an input prompt
//	1. main                   and numbered choices after it
//	2. dev
//	choice:                   numbered choices followed by an input prompt line
var (
	yesNoRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)[\[(]\s*(y|yes)\s*/\s*(n|no)\s*[\])]\s*[?:>]?\s*$`)
	})
	inputPromptRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^.{0,60}[?:>#$]\s*$`)
	})
)

// question is what a settled screen asks, or nil.
func question(text string) *wire.Blocked {
	lines := strings.Split(strings.TrimRight(text, "\n "), "\n")
	end := len(lines) - 1
	for end >= 0 && strings.TrimSpace(lines[end]) == "" {
		end--
	}
	if end < 0 {
		return nil
	}
	last := strings.TrimRight(lines[end], " ")
	if m := yesNoRE().FindStringSubmatch(last); m != nil {
		yes, no := m[1], m[2]
		return &wire.Blocked{Kind: wire.BlockedQuestion, Detail: strings.TrimSpace(last), Question: strings.TrimSpace(last),
			Text: strings.TrimSpace(last), Options: []wire.Option{
				{Label: yes, Key: strings.ToLower(yes), Meaning: wire.MeaningAllowOnce},
				{Label: no, Key: strings.ToLower(no), Meaning: wire.MeaningDeny},
			}}
	}
	// QUESTION: on one of the last lines, followed only by choices and a prompt.
	for i := end; i >= 0 && i >= end-menuSpan; i-- {
		t := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(t, "QUESTION:") {
			continue
		}
		q := strings.TrimSpace(strings.TrimPrefix(t, "QUESTION:"))
		b := &wire.Blocked{Kind: wire.BlockedQuestion, Detail: q, Question: t, Text: q}
		if m := agentkit.ParseMenu(strings.Join(lines[i+1:end+1], "\n"), false); m != nil {
			b.Options = choices(m)
		} else if end > i+1 && !inputPromptRE().MatchString(last) {
			return nil // something else was printed after the question
		}
		return b
	}
	// Numbered choices ending in an input prompt ("choice:", "> ").
	if !inputPromptRE().MatchString(last) {
		return nil
	}
	m := agentkit.ParseMenu(strings.Join(lines[:end], "\n"), false)
	if m == nil || m.Last < end-2 {
		return nil
	}
	return &wire.Blocked{Kind: wire.BlockedQuestion, Detail: m.Question, Question: m.Question, Text: m.Question, Options: choices(m)}
}

// menuSpan bounds how far above the last line a QUESTION: line may be.
const menuSpan = 14

// choices are a plain program's numbered choices: typed as their number and enter.
func choices(m *agentkit.Menu) []wire.Option {
	out := make([]wire.Option, 0, len(m.Items))
	for _, it := range m.Items {
		out = append(out, wire.Option{Label: it.Label, Key: fmt.Sprint(it.N), Meaning: agentkit.Classify(it.Label)})
	}
	return out
}

var _ core.Prompter = (*observer)(nil)

// Prompt implements core.Prompter. Unlike Screen it does not ask for a settled screen:
// it answers "is the question still there" right before an answer is sent.
func (o *observer) Prompt(s core.Screen) *wire.Blocked { return question(s.Text) }

// AnswerSteps implements core.Prompter: a plain program reads a line, so the option's
// key (or the text) is typed and enter pressed.
func (o *observer) AnswerSteps(shown *wire.Blocked, opt *wire.Option, text string) ([]core.AnswerStep, error) {
	line := text
	if opt != nil {
		line = opt.Key
		if text != "" {
			return nil, fmt.Errorf("a shell question takes one line: give an option or --text, not both")
		}
	}
	return []core.AnswerStep{{Text: line, Keys: []string{"enter"}}}, nil
}
