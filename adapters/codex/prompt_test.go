package codex

import (
	"os"
	"path/filepath"
	"testing"

	"orcr/core/wire"
)

func TestParseExecPrompt(t *testing.T) {
	b, _ := os.ReadFile(filepath.Join("testdata", "screens", "exec-prompt.txt"))
	p := parsePrompt(string(b))
	if p == nil {
		t.Fatal("no prompt read off codex 0.171's approval")
	}
	want := []wire.Option{
		{Label: "Yes, proceed", Key: "y", Meaning: wire.MeaningAllowOnce},
		{Label: "Yes, and don't ask again for commands that start with `rm -rf build`", Key: "p", Meaning: wire.MeaningAllowAlways},
		{Label: "No, and tell Codex what to do differently", Key: "esc", Meaning: wire.MeaningDeny, Text: true},
	}
	if len(p.Options) != 3 {
		t.Fatalf("options %+v", p.Options)
	}
	for i := range want {
		if p.Options[i] != want[i] {
			t.Errorf("option %d = %+v, want %+v", i+1, p.Options[i], want[i])
		}
	}
	if p.Detail != "Bash(rm -rf build)" || p.Question != "Would you like to run the following command?" {
		t.Fatalf("prompt %+v", p)
	}
	d, _ := os.ReadFile(filepath.Join("testdata", "screens", "denied.txt"))
	if p := parsePrompt(string(d)); p != nil {
		t.Fatalf("prompt read off a screen without one: %+v", p)
	}
}
