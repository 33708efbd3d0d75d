package ui

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"orcr/core"
	"orcr/core/wire"
)

// answerDialog shows what a blocked agent waits for — the question or the plan in
// full, scrollable — and exactly the options the program shows. Choosing one sends
// agent.answer with its number, so the server re-checks the prompt on screen and maps
// nothing by position itself; an option that takes text (claude's "Tell Claude what to
// change", "No" with what to do instead) opens a line for it first.
type answerDialog struct {
	size
	c      *common
	id     string
	path   string
	b      wire.Blocked
	pick   int // option under the cursor
	scroll int // first shown line of the text
	page   int // text lines there is room for (layout)
	typing bool
	in     textinput.Model
	prefW  int // the box's preferred width
	boxW   int // its width in the room it has (layout)
}

// answerAction asks the root to send an answer.
type answerAction struct{ p wire.AnswerParams }

func newAnswerDialog(c *common, a *wire.Agent, w int) *answerDialog {
	d := &answerDialog{c: c, id: a.ID, path: a.Path, prefW: w}
	if a.Blocked != nil {
		d.b = *a.Blocked
	}
	d.in = textinput.New()
	d.in.Prompt = "› "
	d.in.SetWidth(max(10, w-8))
	if len(d.b.Options) == 0 {
		d.typing = true
		d.in.Placeholder = "answer…"
	}
	return d
}

// follow takes a later reading of the agent d answers. A hook reports a prompt before
// the screen shows its menu, so a dialog opened in between gets the options when the
// record does — unless the user has begun typing a free answer.
func (d *answerDialog) follow(a wire.Agent) {
	if a.ID != d.id || a.State != wire.StateBlocked || a.Blocked == nil || len(a.Blocked.Options) == 0 ||
		len(d.b.Options) > 0 || d.in.Value() != "" || !core.SamePrompt(&d.b, a.Blocked) {
		return
	}
	d.b = *a.Blocked
	d.typing = false
	d.in.Blur()
	d.layout()
}

func (d *answerDialog) Init() tea.Cmd {
	if d.typing {
		return d.in.Focus()
	}
	return nil
}

// textLines is the question or plan wrapped to the dialog's width.
func (d answerDialog) textLines() []string {
	text := d.b.Text
	if text == "" {
		text = d.b.Question
	}
	if text == "" || text == d.b.Detail {
		return nil
	}
	return strings.Split(ansi.Wrap(text, max(10, d.boxW-6), " "), "\n")
}

func (d *answerDialog) SetSize(w, h int) {
	d.size.SetSize(w, h)
	d.layout()
}

// layout fits the box to the room, gives the text the lines the head and the foot
// leave (the page pgup/pgdn move by) and keeps the scroll within the text.
func (d *answerDialog) layout() {
	d.boxW = min(d.width, max(d.prefW, 40))
	head, text, foot := d.parts()
	d.page = d.textRoom(len(head), len(foot))
	d.scroll = min(d.scroll, max(0, len(text)-d.page))
}

// textRoom is how many lines the text gets between a head and a foot of these sizes.
func (d answerDialog) textRoom(head, foot int) int { return max(1, d.height-4-head-foot-1) }

func (d *answerDialog) Update(msg tea.Msg) (tea.Cmd, action) {
	cmd, act := d.update(msg)
	d.layout()
	return cmd, act
}

func (d *answerDialog) update(msg tea.Msg) (tea.Cmd, action) {
	k, ok := msg.(tea.KeyPressMsg)
	if !ok {
		if d.typing {
			var cmd tea.Cmd
			d.in, cmd = d.in.Update(msg)
			return cmd, nil
		}
		return nil, nil
	}
	km := d.c.keys.Dialog
	if km.Cancel.Matches(k) {
		if d.typing && len(d.b.Options) > 0 {
			d.typing = false
			d.in.Blur()
			return nil, nil
		}
		return nil, closeAction{}
	}
	switch s := k.String(); s {
	case "pgdown", "ctrl+d":
		d.scroll += max(1, d.page-1)
		return nil, nil
	case "pgup", "ctrl+u":
		d.scroll = max(0, d.scroll-max(1, d.page-1))
		return nil, nil
	}
	if d.typing {
		if km.Submit.Matches(k) {
			text := strings.TrimSpace(d.in.Value())
			if len(d.b.Options) == 0 {
				if text == "" {
					return nil, closeAction{}
				}
				return nil, answerAction{wire.AnswerParams{Target: d.id, Text: text}}
			}
			return nil, d.choose(d.pick, text)
		}
		var cmd tea.Cmd
		d.in, cmd = d.in.Update(msg)
		return cmd, nil
	}
	n := len(d.b.Options)
	switch s := k.String(); {
	case s == "up" || s == "k" || s == "shift+tab":
		d.pick = (d.pick + n - 1) % n
	case s == "down" || s == "j" || s == "tab":
		d.pick = (d.pick + 1) % n
	case km.Submit.Matches(k):
		return d.open(d.pick)
	case s == "t" && d.b.Options[d.pick].Text:
		return d.open(d.pick)
	default:
		if i, err := strconv.Atoi(s); err == nil && i >= 1 && i <= n {
			d.pick = i - 1
			return d.open(i - 1)
		}
	}
	return nil, nil
}

// open answers with option i, or first asks for its text when it takes text and the
// option is a deny or a feedback (sent empty, it is a plain refusal).
func (d *answerDialog) open(i int) (tea.Cmd, action) {
	if d.b.Options[i].Text && !d.typing {
		d.pick, d.typing = i, true
		d.in.Placeholder = "what to do instead (enter with nothing: just " + strings.ToLower(d.b.Options[i].Label) + ")"
		return d.in.Focus(), nil
	}
	return nil, d.choose(i, "")
}

func (d *answerDialog) choose(i int, text string) action {
	return answerAction{wire.AnswerParams{Target: d.id, Option: i + 1, Text: text}}
}

func (d answerDialog) View() string {
	st := &d.c.styles
	head, text, foot := d.parts()
	// The text gets whatever room the header, options and hints leave.
	room := d.textRoom(len(head), len(foot))
	var body []string
	if len(text) > 0 {
		top := min(d.scroll, max(0, len(text)-room))
		shown := text[top:]
		more := len(shown) > room
		if more {
			shown = shown[:max(0, room-1)]
		}
		body = append(body, "")
		for _, l := range shown {
			body = append(body, st.Text.Render(l))
		}
		if more {
			body = append(body, st.Subtle.Render("↓ "+strconv.Itoa(len(text)-top-len(shown))+" more lines"))
		}
	}
	lines := append(append(head, body...), foot...)
	return dialogBox(d.c, "answer", lines, d.width, d.height, d.boxW)
}

// parts are the dialog's lines: the head (agent, kind, detail), the question or plan
// wrapped, and the foot (question, options, the answer line, hints).
func (d answerDialog) parts() (head, text, foot []string) {
	st := &d.c.styles
	inner := max(10, d.boxW-4)
	head = []string{st.Muted.Render(d.path+" · ") + st.Blocked.Render(d.b.Kind)}
	if d.b.Detail != "" {
		head = append(head, st.Bold.Render(ansi.Truncate(oneLine(d.b.Detail), inner, "…")))
	}
	if d.b.Question != "" && d.b.Question != d.b.Detail && d.b.Text != "" {
		foot = append(foot, "", st.Text.Render(ansi.Truncate(d.b.Question, inner, "…")))
	}
	if len(d.b.Options) > 0 {
		foot = append(foot, "")
	}
	for i, o := range d.b.Options {
		mark := "  "
		if i == d.pick {
			mark = st.Accent.Render("› ")
		}
		ks := st.KeyName
		if o.Meaning == wire.MeaningDeny {
			ks = st.KeyDestructive
		}
		label := o.Label
		if d.typing && i == d.pick && o.Text {
			label += ":"
		}
		line := mark + ks.Render(strconv.Itoa(i+1)+".") + " " + st.Text.Render(label) + st.Subtle.Render("  "+o.Meaning)
		foot = append(foot, ansi.Truncate(line, inner, "…"))
	}
	if d.typing {
		foot = append(foot, "", d.in.View())
	}
	hint := "↑↓ pick · 1-9 choose · enter answer"
	if d.typing {
		hint = "enter send · " + d.c.keys.Dialog.Cancel.Label() + " back"
	}
	text = d.textLines()
	if len(text) > 0 {
		hint += " · pgup/pgdn scroll"
	}
	foot = append(foot, "", st.Subtle.Render(hint+" · "+d.c.keys.Dialog.Cancel.Label()+" cancel"))
	return head, text, foot
}

// answeredMsg is the server's verdict on an answer.
type answeredMsg struct {
	p   wire.AnswerParams
	res wire.AnswerResult
	err error
}

// notice is the status line after an answer: what was chosen and where the agent is
// now, or why nothing was sent.
func (m answeredMsg) notice() string {
	if m.err != nil {
		return "answer: " + strings.SplitN(m.err.Error(), "\n", 2)[0]
	}
	if len(m.res.Answers) == 0 {
		return "answered"
	}
	a := m.res.Answers[0]
	what := "answered " + strconv.Quote(a.Text)
	if a.Option != nil {
		what = "answered " + strconv.Quote(a.Option.Label)
	}
	return what + ": " + a.Agent.Path + " is " + string(a.Agent.State)
}

// answerTimeout bounds an answer call: the server waits up to its own bound (5 s) for
// the state to leave blocked.
const answerCallTimeout = callTimeout + 5*time.Second

func answerCmd(ctx context.Context, svc wire.Transport, p wire.AnswerParams) tea.Cmd {
	return func() tea.Msg {
		ctx, cancel := context.WithTimeout(ctx, answerCallTimeout)
		defer cancel()
		res, err := wire.Call(ctx, svc, wire.AgentAnswer, p)
		return answeredMsg{p, res, err}
	}
}

// withSteer puts a refused steer into the dialog as the answer's text: on the option
// that refuses with what to do instead (claude's "No", amended), or as the answer to a
// question without options. A prompt with no such option shows the options alone.
func (d *answerDialog) withSteer(text string) *answerDialog {
	text = strings.TrimSpace(text)
	if text == "" {
		return d
	}
	if len(d.b.Options) == 0 {
		d.in.SetValue(text)
		return d
	}
	for i, o := range d.b.Options {
		if o.Meaning == wire.MeaningDeny && o.Text {
			d.pick, d.typing = i, true
			d.in.Placeholder = "what to do instead"
			d.in.SetValue(text)
			return d
		}
	}
	return d
}

// steerBlocked opens the answer dialog for an agent a steer was refused for
// (agent_blocked): the prompt came up after the steer dialog opened. The prompt is
// the record's, or the one the refusal names when the record has not caught up.
func (m *Model) steerBlocked(msg sentMsg) tea.Cmd {
	n, ok := m.idx.byID[msg.target]
	if !ok || n.agent == nil {
		return nil
	}
	a := *n.agent
	if !core.WaitsForChoice(a.State, a.Blocked) {
		var we *wire.Error
		if !errors.As(msg.err, &we) {
			return nil
		}
		raw, err := json.Marshal(we.Data["blocked"])
		var b wire.Blocked
		if err != nil || json.Unmarshal(raw, &b) != nil || b.Kind == "" {
			return nil
		}
		a.Blocked = &b
	}
	dw := max(20, min(m.w-8, 70))
	return m.pushDialog(newAnswerDialog(m.c, &a, dw).withSteer(msg.text))
}
