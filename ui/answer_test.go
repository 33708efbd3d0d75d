package ui

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"orcr/core/wire"
)

// blockedOn puts a blocked claude agent on the plan prompt and selects it.
func blockedOn(t *testing.T, m *Model, b *wire.Blocked) {
	t.Helper()
	p := agent("0030", "plans/parser", wire.StateBlocked, "claude", "opus-5", time.Minute, 1000, cost(0.02))
	p.Blocked = b
	m.Update(eventsMsg{events: []wire.Event{{Event: wire.EventAgentState, Seq: 12, At: t0, Agent: &p}}})
	selectPath(t, m, "plans/parser")
}

func TestAnswerShowsTheProgramsOptions(t *testing.T) {
	m := newTestModel(t, 100, 30, Options{})
	press(m, "b", "r")
	if len(m.dialogs) != 1 {
		t.Fatal("r did not open the answer dialog")
	}
	v := plain(screen(t, m))
	for _, want := range []string{"review/auth/security", "Bash(rm -rf build)", "1. Yes", "2. Yes, and always allow",
		"3. Yes, and switch to auto mode", "4. No", "deny"} {
		if !strings.Contains(v, want) {
			t.Fatalf("answer dialog lacks %q:\n%s", want, v)
		}
	}
}

// Choosing "No" answers by its number through agent.answer: the server maps it onto
// the real option after re-reading the screen. Issue 9's dialog sent "3" here.
func TestAnswerNoIsTheDenyOption(t *testing.T) {
	m := newTestModel(t, 100, 30, Options{})
	press(m, "b", "r")
	// "No" takes text: enter with none is a plain refusal.
	act := runDialog(t, m.dialogs[0], keys("down", "down", "down", "enter", "enter")...)
	aa, ok := act.(answerAction)
	if !ok || !reflect.DeepEqual(aa.p, wire.AnswerParams{Target: "0007", Option: 4}) {
		t.Fatalf("action = %#v", act)
	}
	if cmd := m.updateAction(act); cmd == nil || len(m.dialogs) != 0 {
		t.Fatal("answer action did not close the dialog with a command")
	}
}

func TestAnswerDenyWithText(t *testing.T) {
	m := newTestModel(t, 100, 30, Options{})
	press(m, "b", "r")
	msgs := append(keys("4"), textKeys("keep the build dir")...)
	act := runDialog(t, m.dialogs[0], append(msgs, key("enter"))...)
	aa, ok := act.(answerAction)
	if !ok || !reflect.DeepEqual(aa.p, wire.AnswerParams{Target: "0007", Option: 4, Text: "keep the build dir"}) {
		t.Fatalf("action = %#v", act)
	}
}

func TestAnswerDigitPicksAtOnce(t *testing.T) {
	m := newTestModel(t, 100, 30, Options{})
	press(m, "b", "r")
	act := runDialog(t, m.dialogs[0], keys("1")...)
	if aa, ok := act.(answerAction); !ok || aa.p.Option != 1 || aa.p.Text != "" {
		t.Fatalf("action = %#v", act)
	}
}

func TestAnswerFreeText(t *testing.T) {
	m := newTestModel(t, 100, 30, Options{})
	blockedOn(t, m, &wire.Blocked{Kind: wire.BlockedQuestion, Detail: "QUESTION: which branch?", Question: "QUESTION: which branch?"})
	press(m, "r")
	act := runDialog(t, m.dialogs[0], append(textKeys("main"), key("enter"))...)
	if aa, ok := act.(answerAction); !ok || !reflect.DeepEqual(aa.p, wire.AnswerParams{Target: "0030", Text: "main"}) {
		t.Fatalf("action = %#v", act)
	}
}

func TestAnswerPlanScrolls(t *testing.T) {
	m := newTestModel(t, 100, 30, Options{})
	blockedOn(t, m, planPrompt())
	press(m, "r")
	v := plain(screen(t, m))
	if !strings.Contains(v, "1. Step 1:") || strings.Contains(v, "30. Step 30:") || !strings.Contains(v, "more lines") {
		t.Fatalf("plan not shown from its top with more below:\n%s", v)
	}
	for i := 0; i < 40; i++ {
		press(m, "pgdown")
	}
	v = plain(screen(t, m))
	if !strings.Contains(v, "30. Step 30:") || !strings.Contains(v, "3. Tell Claude what to change") {
		t.Fatalf("plan's end not reachable, or options lost:\n%s", v)
	}
	act := runDialog(t, m.dialogs[0], append(append(keys("3"), textKeys("keep the old API")...), key("enter"))...)
	if aa, ok := act.(answerAction); !ok || !reflect.DeepEqual(aa.p, wire.AnswerParams{Target: "0030", Option: 3, Text: "keep the old API"}) {
		t.Fatalf("action = %#v", act)
	}
}

func TestAnsweredNotice(t *testing.T) {
	m := newTestModel(t, 100, 30, Options{})
	a := fixture()[6]
	a.State = wire.StateWorking
	m.Update(answeredMsg{res: wire.AnswerResult{Answers: []wire.Answered{{Agent: a, Option: &wire.Option{Label: "No"}}}}})
	if !strings.Contains(m.status.notice, `answered "No": review/auth/security is working`) {
		t.Fatalf("notice %q", m.status.notice)
	}
	m.Update(answeredMsg{err: wire.Errorf(wire.CodePromptGone, "review/auth/security: the prompt it was blocked on is no longer on screen; nothing was sent")})
	if !strings.Contains(m.status.notice, "nothing was sent") {
		t.Fatalf("notice %q", m.status.notice)
	}
}

func TestGoldenAnswer(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {160, 48}} {
		name := fmt.Sprintf("%dx%d", sz[0], sz[1])
		t.Run("permission_"+name, func(t *testing.T) {
			m := newTestModel(t, sz[0], sz[1], Options{})
			press(m, "b", "r")
			golden.RequireEqual(t, screen(t, m))
		})
		t.Run("plan_"+name, func(t *testing.T) {
			m := newTestModel(t, sz[0], sz[1], Options{})
			blockedOn(t, m, planPrompt())
			press(m, "r")
			golden.RequireEqual(t, screen(t, m))
		})
	}
}

// A hook reports the prompt before the screen shows its menu: a dialog opened in
// between shows the options once the record has them.
func TestAnswerDialogGetsTheOptionsLater(t *testing.T) {
	m := newTestModel(t, 100, 30, Options{})
	hook := &wire.Blocked{Kind: wire.BlockedPermission, Detail: "Bash(rm -rf dist)"}
	blockedOn(t, m, hook)
	press(m, "r")
	if v := plain(screen(t, m)); !strings.Contains(v, "answer…") {
		t.Fatalf("no free-text line before the options came:\n%s", v)
	}
	p := agent("0030", "plans/parser", wire.StateBlocked, "claude", "opus-5", time.Minute, 1000, cost(0.02))
	menu := *hook
	menu.Question = "Do you want to proceed?"
	menu.Options = []wire.Option{{Label: "Yes", Key: "1", Meaning: wire.MeaningAllowOnce}, {Label: "No", Key: "2", Meaning: wire.MeaningDeny}}
	p.Blocked = &menu
	m.Update(eventsMsg{events: []wire.Event{{Event: wire.EventAgentUpdated, Seq: 13, At: t0, Agent: &p}}})
	v := plain(screen(t, m))
	if !strings.Contains(v, "1. Yes") || !strings.Contains(v, "2. No") || strings.Contains(v, "answer…") {
		t.Fatalf("the dialog did not take the options:\n%s", v)
	}
	act := runDialog(t, m.dialogs[0], keys("2")...)
	if aa, ok := act.(answerAction); !ok || aa.p.Option != 2 {
		t.Fatalf("action = %#v", act)
	}
}

// Steering an agent that waits on a prompt opens the answer dialog, not the steer
// one: text typed into claude's menu would answer it (Enter is "Yes").
func TestSteerOnBlockedOpensAnswer(t *testing.T) {
	for _, k := range []string{"s", "S"} {
		m := newTestModel(t, 100, 30, Options{})
		press(m, "b", k)
		if _, ok := topDialog(m).(*answerDialog); !ok || len(m.dialogs) != 1 {
			t.Fatalf("%s on a blocked agent opened %T (%d dialogs), want the answer dialog", k, topDialog(m), len(m.dialogs))
		}
		if !strings.Contains(m.status.notice, "waits for an answer") {
			t.Fatalf("notice %q", m.status.notice)
		}
		v := plain(screen(t, m))
		if !strings.Contains(v, "Bash(rm -rf build)") || !strings.Contains(v, "4. No") {
			t.Fatalf("answer dialog lacks the prompt:\n%s", v)
		}
	}
	// A usage limit shows nothing to pick: "continue" is typed as a steer.
	m := newTestModel(t, 100, 30, Options{})
	blockedOn(t, m, &wire.Blocked{Kind: wire.BlockedLimit, Detail: "5-hour limit reached"})
	press(m, "s")
	if _, ok := topDialog(m).(*steerDialog); !ok {
		t.Fatalf("steer on a usage limit opened %T, want the steer dialog", topDialog(m))
	}
}

// A steer the server refuses with agent_blocked (the prompt came up while it was
// written) goes on in the answer dialog, the text kept as the "No"'s reason.
func TestSteerRefusedGoesToAnswer(t *testing.T) {
	m := newTestModel(t, 100, 30, Options{})
	selectPath(t, m, "demo/a")
	b := permissionPrompt()
	err := &wire.Error{Code: wire.CodeAgentBlocked, Message: "demo/a waits for an answer to a permission prompt (Bash(rm -rf build))",
		Data: map[string]any{"blocked": b, "answer": "orcr agent answer demo/a --deny --text \"…\""}}
	m.Update(sentMsg{target: "0001", err: err, text: "list the files first"})
	if _, ok := topDialog(m).(*answerDialog); !ok {
		t.Fatalf("a refused steer opened %T, want the answer dialog", topDialog(m))
	}
	act := runDialog(t, topDialog(m), key("enter"))
	aa, ok := act.(answerAction)
	if !ok || !reflect.DeepEqual(aa.p, wire.AnswerParams{Target: "0001", Option: 4, Text: "list the files first"}) {
		t.Fatalf("action = %#v", act)
	}
}
