package shell

import (
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
)

func TestQuestion(t *testing.T) {
	cases := []struct {
		screen   string
		question string
		options  string // labels joined by |
	}{
		{"building…\nProceed? [y/N]", "Proceed? [y/N]", "y|N"},
		{"Overwrite config (yes/no)? ", "Overwrite config (yes/no)?", "yes|no"},
		{"QUESTION: which branch?\n1. main\n2. dev\n> ", "QUESTION: which branch?", "main|dev"},
		{"log line\nQUESTION: ship it now?", "QUESTION: ship it now?", ""},
		{"Pick a colour:\n1) red\n2) green\n3) blue\nchoice: ", "Pick a colour:", "red|green|blue"},
		{"Proceed? [y/N] y\nworking…", "", ""},
		{"1. one\n2. two\ndone, all good", "", ""},
		{"$ ", "", ""},
	}
	for _, c := range cases {
		q := question(c.screen)
		if c.question == "" {
			if q != nil {
				t.Errorf("%q: read a question %+v", c.screen, q)
			}
			continue
		}
		if q == nil || q.Question != c.question || q.Kind != wire.BlockedQuestion {
			t.Errorf("%q: question %+v, want %q", c.screen, q, c.question)
			continue
		}
		got := ""
		for i, o := range q.Options {
			if i > 0 {
				got += "|"
			}
			got += o.Label
		}
		if got != c.options {
			t.Errorf("%q: options %q, want %q", c.screen, got, c.options)
		}
	}
}

func TestObserverBlocksOnSettledQuestion(t *testing.T) {
	o := New().Observe(wire.Agent{})
	scr := core.Screen{Text: "Proceed? [y/N]"}
	if s := o.Screen(scr, 100*time.Millisecond); s.State != wire.StateWorking {
		t.Fatalf("unsettled: %+v", s)
	}
	s := o.Screen(scr, 2*time.Second)
	if s.State != wire.StateBlocked || s.Blocked.Options[1].Meaning != wire.MeaningDeny {
		t.Fatalf("settled question: %+v", s)
	}
	if s := o.Screen(scr, 0); s != nil {
		t.Fatalf("still asking: %+v", s)
	}
	if s := o.Screen(core.Screen{Text: "Proceed? [y/N] y\nok"}, 0); s.State != wire.StateWorking {
		t.Fatalf("answered: %+v", s)
	}
}
