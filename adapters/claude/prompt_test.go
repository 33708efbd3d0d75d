package claude

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"orcr/core"
	"orcr/core/wire"
)

func screen(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "screens", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseBashPrompt(t *testing.T) {
	b := parsePrompt(screen(t, "bash-prompt.txt"))
	if b == nil {
		t.Fatal("no prompt read off the 2.1.328 Bash dialog")
	}
	want := []wire.Option{
		{Label: "Yes", Key: "1", Meaning: wire.MeaningAllowOnce},
		{Label: "Yes, and always allow access to /tmp/ex2/work/build from this project", Key: "2", Meaning: wire.MeaningAllowAlways},
		{Label: "Yes, and switch to auto mode", Key: "3", Meaning: wire.MeaningOther},
		{Label: "No", Key: "4", Meaning: wire.MeaningDeny, Text: true},
	}
	if len(b.Options) != len(want) {
		t.Fatalf("options %+v", b.Options)
	}
	for i := range want {
		if b.Options[i] != want[i] {
			t.Errorf("option %d = %+v, want %+v", i+1, b.Options[i], want[i])
		}
	}
	if b.Kind != wire.BlockedPermission || b.Question != "Do you want to proceed?" || b.Detail != "Bash(rm -rf build)" {
		t.Fatalf("prompt %+v", b)
	}
}

func TestParsePlanPrompt(t *testing.T) {
	b := parsePrompt(screen(t, "plan-prompt.txt"))
	if b == nil || b.Kind != wire.BlockedPlan {
		t.Fatalf("plan prompt %+v", b)
	}
	wantPlan := "Refactor plan\n\n1. Split the parser into lexer and parser.\n2. Keep the old API as a thin wrapper.\n3. Add tests for every token kind."
	if b.Text != wantPlan {
		t.Fatalf("plan text %q", b.Text)
	}
	want := []wire.Option{
		{Label: "Yes, and use auto mode", Key: "1", Meaning: wire.MeaningOther},
		{Label: "Yes, manually approve edits", Key: "2", Meaning: wire.MeaningAllowOnce},
		{Label: "Tell Claude what to change", Key: "3", Meaning: wire.MeaningDeny, Text: true},
	}
	if len(b.Options) != 3 {
		t.Fatalf("options %+v", b.Options)
	}
	for i := range want {
		if b.Options[i] != want[i] {
			t.Errorf("option %d = %+v, want %+v", i+1, b.Options[i], want[i])
		}
	}
}

func TestNoPromptOnPlainScreens(t *testing.T) {
	for _, name := range []string{"answered-no.txt", "done-list.txt"} {
		if b := parsePrompt(screen(t, name)); b != nil {
			t.Errorf("%s: read a prompt off a screen without one: %+v", name, b)
		}
	}
}

func TestScreenLeavesBlockedWhenMenuGoes(t *testing.T) {
	o := testObserver(t, "")
	mustHook(t, o, "PermissionRequest", `{"tool_name":"Bash","tool_input":{"command":"rm -rf build"}}`)
	s := o.Screen(coreScreen(screen(t, "bash-prompt.txt")), 0)
	if s == nil || s.State != wire.StateBlocked || len(s.Blocked.Options) != 4 || s.Blocked.Detail != "Bash(rm -rf build)" {
		t.Fatalf("menu on screen: %+v", s)
	}
	// The hook decided the state; the screen only added its options.
	if s.Source != "hook" || s.Reason != "permission: Bash(rm -rf build)" {
		t.Fatalf("menu completing the hook's prompt: source %q reason %q", s.Source, s.Reason)
	}
	if s := o.Screen(coreScreen(screen(t, "bash-prompt.txt")), 0); s != nil {
		t.Fatalf("same menu again said something: %+v", s)
	}
	s = o.Screen(coreScreen(screen(t, "answered-no.txt")), 0)
	if s == nil || s.State != wire.StateDone {
		t.Fatalf("after No: %+v", s)
	}
}

func coreScreen(s string) core.Screen { return core.Screen{Text: s} }

func TestLastActivity(t *testing.T) {
	old := "  ⎿  Interrupted · What should Claude do instead?\n\n❯ try again\n\n● Running it\n\n─────\n❯ \n─────\n  status"
	if got := lastActivity(old); got != "● Running it" {
		t.Fatalf("last activity %q", got)
	}
	if got := lastActivity(screen(t, "answered-no.txt")); got != "⎿  Interrupted · What should Claude do instead?" {
		t.Fatalf("last activity %q", got)
	}
}

// typedInto is the plan prompt with the cursor on "Tell Claude what to change" and
// text in its place, as claude 2.1.328 draws it.
func typedInto(t *testing.T, text string) string {
	t.Helper()
	s := screen(t, "plan-prompt.txt")
	s = strings.Replace(s, "   ❯ 1. Yes, and use auto mode", "     1. Yes, and use auto mode", 1)
	return strings.Replace(s, "     3. Tell Claude what to change", "   ❯ 3. "+text, 1)
}

func TestPlanFeedbackStepsWaitForTheField(t *testing.T) {
	o := testObserver(t, "")
	b := o.Prompt(coreScreen(screen(t, "plan-prompt.txt")))
	steps, err := o.AnswerSteps(b, &b.Options[2], "keep the old API")
	if err != nil || len(steps) != 3 || steps[0].Text != "3" || steps[1].Text != "keep the old API" || steps[2].Keys[0] != "enter" {
		t.Fatalf("steps %+v %v", steps, err)
	}
	cursor := strings.Replace(strings.Replace(screen(t, "plan-prompt.txt"), "   ❯ 1. Yes", "     1. Yes", 1),
		"     3. Tell Claude", "   ❯ 3. Tell Claude", 1)
	if steps[0].Until(screen(t, "plan-prompt.txt")) || !steps[0].Until(cursor) {
		t.Fatal("the digit's step does not wait for the cursor")
	}
	// The plan itself says "Keep the old API": only the option's place counts.
	if steps[1].Until(cursor) {
		t.Fatal("text taken as typed while the field still shows its placeholder")
	}
	if steps[1].Until(typedInto(t, "keep the old")) {
		t.Fatal("text taken as typed before all of it shows")
	}
	if !steps[1].Until(typedInto(t, "keep the old API")) {
		t.Fatal("typed text not seen in the field")
	}
}

func TestTypingIntoAFieldIsTheSamePrompt(t *testing.T) {
	o := testObserver(t, "")
	mustHook(t, o, "PermissionRequest", `{"tool_name":"ExitPlanMode","tool_input":{"plan":"Refactor plan"}}`)
	s := o.Screen(coreScreen(screen(t, "plan-prompt.txt")), 0)
	if s == nil || s.Blocked == nil || s.Blocked.Kind != wire.BlockedPlan || len(s.Blocked.Options) != 3 {
		t.Fatalf("plan on screen: %+v", s)
	}
	if s := o.Screen(coreScreen(typedInto(t, "keep the old API")), 0); s != nil {
		t.Fatalf("feedback being typed read as a new prompt: %+v %+v", s, s.Blocked)
	}
	if o.blocked.Options[2].Label != "Tell Claude what to change" || o.blocked.Text != "Refactor plan" {
		t.Fatalf("record changed: %+v", o.blocked)
	}
}

// TestRefusedEdit: a "No" to an edit ends claude's turn with no hook and no
// "Interrupted" line — the tool's result is "Rejected write to …" with the refused
// content under it (claude 2.1.328, captured) — so the screen says done; an allowed
// write does not.
func TestRefusedEdit(t *testing.T) {
	if !refused(screen(t, "write-rejected.txt")) || !refused(screen(t, "answered-no.txt")) {
		t.Fatal("a refusal not seen")
	}
	if refused(screen(t, "write-allowed.txt")) || refused(screen(t, "done-list.txt")) {
		t.Fatal("a refusal seen where there is none")
	}
	o := testObserver(t, "")
	mustHook(t, o, "PermissionRequest", `{"tool_name":"Write","tool_input":{"file_path":"/tmp/work/x.txt","content":"hi\n"}}`)
	o.Screen(coreScreen(screen(t, "bash-prompt.txt")), 0) // the menu is seen
	s := o.Screen(coreScreen(screen(t, "write-rejected.txt")), 0)
	if s == nil || s.State != wire.StateDone {
		t.Fatalf("after No to a write: %+v", s)
	}
}
