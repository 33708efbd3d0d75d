package claude

import (
	"fmt"
	"strings"
	"time"

	"orcr/adapters/internal/agentkit"
	"orcr/core"
	"orcr/core/wire"
)

// Claude 2.1.x draws every prompt as a numbered menu under its question, with the
// cursor (❯) on one option; the digit of an option picks it at once, except an option
// that takes text, where it only moves the cursor. Seen on 2.1.328 (reference
// agent-clis.md §8):
//
//	Bash command … Do you want to proceed?
//	❯ 1. Yes
//	  2. Yes, and always allow access to /w/build from this project
//	  3. Yes, and switch to auto mode · auto mode handles these prompts for you
//	  4. No
//	Esc to cancel · Tab to amend
//
//	Here is Claude's plan: … Would you like to proceed?
//	❯ 1. Yes, and use auto mode
//	  2. Yes, manually approve edits
//	  3. Tell Claude what to change
//	     shift+tab to approve with this feedback
const (
	planMarker   = "Here is Claude's plan:"
	amendHint    = "Tab to amend"
	planFeedback = "tell claude what to change"
)

var (
	_ core.Prompter   = (*observer)(nil)
	_ core.InputGuard = (*observer)(nil)
)

// inputGuard: claude 2.1.328 drops keys pressed within 150 ms (its "UR") of a dialog's
// first paint. Measured through tmux, counted from the first screen read that shows the
// dialog: a key after 100 ms was dropped every time, after 150 ms taken every time. The
// margin covers a paint whose timestamp claude takes after orcr has read it.
const inputGuard = 200 * time.Millisecond

// InputGuard implements core.InputGuard.
func (o *observer) InputGuard() time.Duration { return inputGuard }

// Prompt implements core.Prompter: the menu claude shows now, if any.
func (o *observer) Prompt(s core.Screen) *wire.Blocked {
	o.promptText = s.Text
	return parsePrompt(s.Text)
}

// parsePrompt reads claude's prompt menu off a screen.
func parsePrompt(text string) *wire.Blocked {
	m := agentkit.ParseMenu(text, true)
	if m == nil {
		return nil
	}
	// A claude menu ends with its key hints; a numbered list in the conversation
	// above the input box does not.
	if !m.HasBelow("Esc to") && !m.HasBelow("esc to") && !m.HasBelow("Enter to") && !m.HasBelow("ctrl+g") &&
		!strings.HasSuffix(m.Question, "?") {
		return nil
	}
	b := &wire.Blocked{Kind: wire.BlockedPermission, Question: m.Question, Options: m.Options()}
	for i := range b.Options {
		b.Options[i].Label = cutHint(b.Options[i].Label)
	}
	switch {
	case strings.Contains(text, planMarker):
		b.Kind, b.Detail, b.Text = wire.BlockedPlan, "plan", planText(text, m)
		for i, op := range b.Options {
			if strings.ToLower(op.Label) == planFeedback {
				b.Options[i].Text = true
			}
		}
	case strings.HasPrefix(m.Question, "Do you want") || strings.Contains(m.Question, "proceed?"):
		b.Detail = permissionDetail(text, m)
		if m.HasBelow(amendHint) {
			for i, op := range b.Options {
				if op.Meaning == wire.MeaningDeny {
					b.Options[i].Text = true
				}
			}
		}
	default:
		b.Kind, b.Detail = wire.BlockedQuestion, m.Question
	}
	return b
}

// cutHint drops claude's "· auto mode handles these prompts for you" style tails,
// which are advice about the option and not its label.
func cutHint(label string) string {
	if i := strings.Index(label, " · "); i > 0 {
		return strings.TrimSpace(label[:i])
	}
	return label
}

// planText is the plan between "Here is Claude's plan:" and the menu's question.
func planText(text string, m *agentkit.Menu) string {
	lines := strings.Split(text, "\n")
	start := -1
	for i, l := range lines {
		if strings.Contains(l, planMarker) {
			start = i + 1
		}
	}
	if start < 0 {
		return ""
	}
	var out []string
	for i := start; i < m.First && i < len(lines); i++ {
		l := strings.TrimRight(lines[i], " ")
		t := strings.TrimSpace(l)
		if isRule(t) {
			if len(out) > 0 {
				break // the plan's closing rule
			}
			continue
		}
		out = append(out, strings.TrimPrefix(strings.TrimPrefix(l, "  "), " "))
	}
	// With no closing rule the menu's question is the last line read: it is the
	// dialog's, not the plan's.
	for len(out) > 0 && strings.TrimSpace(out[len(out)-1]) == "" {
		out = out[:len(out)-1]
	}
	if len(out) > 0 && m.Question != "" && strings.TrimSpace(out[len(out)-1]) == m.Question {
		out = out[:len(out)-1]
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// permissionDetail is "Bash(rm -rf build)" from the dialog's title and command lines.
func permissionDetail(text string, m *agentkit.Menu) string {
	lines := strings.Split(text, "\n")
	title, cmd := "", ""
	for i := m.First - 1; i >= 0 && i > m.First-40; i-- {
		t := strings.TrimSpace(lines[i])
		if strings.HasSuffix(t, " command") && title == "" {
			title = strings.TrimSuffix(t, " command")
			if i+1 < len(lines) {
				// The command sits between the dashed rules under the description.
				for j := i + 1; j < m.First; j++ {
					if isRule(strings.TrimSpace(lines[j])) && j+1 < m.First {
						cmd = strings.TrimSpace(lines[j+1])
						break
					}
				}
			}
			break
		}
	}
	if title == "" {
		return m.Question
	}
	return fmt.Sprintf("%s(%s)", title, cmd)
}

func isRule(t string) bool {
	if len(t) < 3 {
		return false
	}
	return strings.Trim(t, "─╌━-═▔▁") == ""
}

// AnswerSteps implements core.Prompter.
func (o *observer) AnswerSteps(shown *wire.Blocked, opt *wire.Option, text string) ([]core.AnswerStep, error) {
	if opt == nil {
		return nil, fmt.Errorf("claude shows a menu: pick an option (--allow, --deny, --option N); --text goes along with an option that takes it")
	}
	idx := -1
	for i, op := range shown.Options {
		if op.Label == opt.Label && op.Key == opt.Key {
			idx = i
		}
	}
	if idx < 0 {
		return nil, fmt.Errorf("option %q is not on screen", opt.Label)
	}
	if text == "" {
		if opt.Text && shown.Kind == wire.BlockedPlan {
			// The feedback option's digit only moves the cursor; enter rejects.
			return []core.AnswerStep{{Text: opt.Key, Until: cursorOn(idx)}, {Keys: []string{"enter"}}}, nil
		}
		return []core.AnswerStep{{Text: opt.Key}}, nil
	}
	if !opt.Text {
		return nil, fmt.Errorf("option %q takes no text; options that do: %s", opt.Label, textOptions(shown))
	}
	// The text shows in the option's own place ("3. keep the old API", "4. No, use
	// make instead"); enter goes only once it does. Sent sooner, claude can read the
	// text and the enter in one burst and take the enter as part of a paste. The
	// screen elsewhere may hold the same words (the plan itself), so only the option's
	// lines count, and only once its label has changed from the placeholder.
	var placeholder string
	opened := func(s string) bool {
		m := agentkit.ParseMenu(s, true)
		if m == nil || m.Selected() != idx || idx >= len(m.Items) {
			return false
		}
		placeholder = m.Items[idx].Label
		return true
	}
	typed := func(s string) bool { return fieldShows(s, idx, placeholder, text) }
	if shown.Kind == wire.BlockedPlan {
		return []core.AnswerStep{{Text: opt.Key, Until: opened}, {Text: text, Until: typed}, {Keys: []string{"enter"}}}, nil
	}
	// "No" amended: move the cursor there, Tab opens the text, enter sends both.
	m := agentkit.ParseMenu(o.promptText, true)
	from := 0
	if m != nil && m.Selected() >= 0 {
		from = m.Selected()
	}
	steps := []core.AnswerStep{}
	if mv := agentkit.MoveKeys(from, idx); len(mv) > 0 {
		steps = append(steps, core.AnswerStep{Keys: mv, Until: cursorOn(idx)})
	}
	steps = append(steps,
		core.AnswerStep{Keys: []string{"tab"}, Until: func(s string) bool {
			p := parsePrompt(s)
			return p != nil && idx < len(p.Options) && p.Options[idx].Label != opt.Label && opened(s)
		}},
		core.AnswerStep{Text: text, Until: typed},
		core.AnswerStep{Keys: []string{"enter"}})
	return steps, nil
}

// cursorOn holds once the menu's cursor is on item idx.
func cursorOn(idx int) func(string) bool {
	return func(s string) bool {
		m := agentkit.ParseMenu(s, true)
		return m != nil && m.Selected() == idx
	}
}

// fieldShows reports whether menu item idx, a text field whose empty label was
// placeholder, shows text: its label changed, and its lines (the item's and the ones
// it wraps onto, up to the next item or a blank line) hold the text, spaces aside.
func fieldShows(screen string, idx int, placeholder, text string) bool {
	m := agentkit.ParseMenu(screen, true)
	if m == nil || idx >= len(m.Items) || m.Items[idx].Label == placeholder {
		return false
	}
	lines := strings.Split(screen, "\n")
	end := len(lines)
	if idx+1 < len(m.Items) {
		end = m.Items[idx+1].Line
	}
	var got []string
	for i := m.Items[idx].Line; i < end; i++ {
		t := strings.TrimSpace(lines[i])
		if t == "" {
			break
		}
		got = append(got, t)
	}
	return strings.Contains(strings.Join(strings.Fields(strings.Join(got, " ")), " "), strings.Join(strings.Fields(text), " "))
}

func textOptions(b *wire.Blocked) string {
	var out []string
	for i, op := range b.Options {
		if op.Text {
			out = append(out, fmt.Sprintf("%d. %s", i+1, op.Label))
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}
