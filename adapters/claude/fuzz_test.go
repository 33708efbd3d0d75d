package claude

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/adapters/internal/agentkit"
	"orcr/core"
	"orcr/core/wire"
)

// FuzzTranscriptAndHooks feeds arbitrary transcript lines and hook payloads to the
// claude parsers: a truncated, garbled or hostile line must never panic, and token
// counts never go negative.
func FuzzTranscriptAndHooks(f *testing.F) {
	f.Add("Stop", []byte(`{"session_id":"s1","last_assistant_message":"done"}`),
		[]byte(`{"type":"assistant","message":{"model":"claude-opus-5","id":"m1","usage":{"input_tokens":10,"output_tokens":5}}}`))
	f.Add("Notification", []byte(`{"message":"Claude needs your permission to use Bash","notification_type":"permission_prompt"}`),
		[]byte(`{"type":"user","message":{"content":[{"type":"tool_result","content":"x"}]}}`))
	f.Add("StopFailure", []byte(`{"error":"rate_limit","last_assistant_message":"5-hour limit reached ∙ resets 3pm"}`),
		[]byte(`{"type":"system","subtype":"api_error","content":"Claude AI usage limit reached|1764000000"}`))
	f.Add("statusline", []byte(`{"model":{"id":"claude-opus-5"},"cost":{"total_cost_usd":-1}}`), []byte(`{"type":"assistant"`))
	f.Add("SessionStart", []byte(`{"source":"clear","model":"x","transcript_path":"/nonexistent/t.jsonl"}`), []byte{0xff, '\n', '{'})
	p := New(Options{ConfigDir: f.TempDir()})
	f.Fuzz(func(t *testing.T, event string, payload, line []byte) {
		o := p.Observe(wire.Agent{ID: "a1", Provider: Name, Prompt: "go", Cwd: "/nonexistent/orcr-fuzz"}).(*observer)
		defer o.Close()
		_, _ = o.Hook(event, payload)
		tr := NewTranscript()
		tr.Add(line)
		tr.Add(payload)
		for model, tok := range tr.ByModel() {
			if tok.Input < 0 || tok.Output < 0 || tok.CacheRead < 0 || tok.CacheWrite5m < 0 || tok.CacheWrite1h < 0 {
				t.Fatalf("negative tokens for %q: %+v", model, tok)
			}
		}
	})
}

// FuzzPromptAndAnswer feeds arbitrary screens to the claude prompt parser and the
// observer's screen rules, and answers every option the parser finds: nothing panics,
// a prompt has options with keys (a plan's kind is plan, its text never holds the
// menu), and the steps for an option either are refused or start with input.
func FuzzPromptAndAnswer(f *testing.F) {
	for _, name := range []string{"bash-prompt.txt", "plan-prompt.txt", "answered-no.txt", "done-list.txt"} {
		b, err := os.ReadFile(filepath.Join("testdata", "screens", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b), "use make clean")
	}
	f.Add(" Here is Claude's plan:\n ╌╌╌\n x\n ╌╌╌\n Would you like to proceed?\n ❯ 1. Yes\n   2. Tell Claude what to change\n", "")
	f.Add(" Bash command\n ───\n Do you want to proceed?\n ❯ 1. Yes\n   2. No\n Esc to cancel · Tab to amend", "no")
	f.Add("Do you want to proceed?\n❯ 1. Yes\n  2. No\n", "\x00")
	p := New(Options{ConfigDir: f.TempDir()})
	f.Fuzz(func(t *testing.T, screen, text string) {
		o := p.Observe(wire.Agent{ID: "a1", Provider: Name, Prompt: "go", Cwd: "/nonexistent/orcr-fuzz"}).(*observer)
		defer o.Close()
		_ = o.Screen(core.Screen{Text: screen}, time.Second)
		b := o.Prompt(core.Screen{Text: screen})
		if b == nil {
			return
		}
		if len(b.Options) < 2 {
			t.Fatalf("a prompt of %d options", len(b.Options))
		}
		if b.Kind == wire.BlockedPlan {
			// No menu line is in the plan text: a line that shows once on the screen,
			// as a menu item, cannot show in text read from above the menu.
			lines := strings.Split(screen, "\n")
			for _, it := range agentkit.ParseMenu(screen, true).Items {
				l := strings.TrimSpace(lines[it.Line])
				if strings.Count(screen, l) == 1 && strings.Contains(b.Text, l) {
					t.Fatalf("the plan text holds the menu line %q: %q", l, b.Text)
				}
			}
		}
		for i, op := range b.Options {
			if op.Key == "" {
				t.Fatalf("option %d has no key: %+v", i, op)
			}
			for _, tx := range []string{"", text} {
				steps, err := o.AnswerSteps(b, &b.Options[i], tx)
				if err != nil {
					continue
				}
				if len(steps) == 0 || steps[0].Text == "" && len(steps[0].Keys) == 0 {
					t.Fatalf("option %d with %q: steps %+v", i, tx, steps)
				}
				for _, s := range steps {
					if s.Until != nil {
						_ = s.Until(screen)
					}
				}
			}
		}
	})
}
