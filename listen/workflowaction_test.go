package listen

import (
	"strings"
	"testing"
)

func TestWorkflowActionParses(t *testing.T) {
	src := "[source]\ntype = \"shell\"\ncommand = \"true\"\n[action]\nworkflow = \"triage\"\nrepo = \"/src/{{repo}}\"\n"
	l, err := Parse("w", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if !l.Action.IsWorkflow() || l.Action.Workflow != "triage" || l.Action.Repo.Text != "/src/{{repo}}" || actionSummary(l.Action) != "workflow triage" {
		t.Fatalf("action %+v", l.Action)
	}
	for _, c := range []struct{ extra, want string }{
		{"workflow = \"triage\"\nprompt = \"x\"\n", "prompt belongs to another kind of action"},
		{"workflow = \"Bad Name\"\n", "the name of a workflow file"},
		{"workflow = \"triage\"\nrepo = \"rel\"\n", "absolute path"},
	} {
		_, err := Parse("w", []byte("[source]\ntype = \"shell\"\ncommand = \"true\"\n[action]\n"+c.extra))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.extra, err, c.want)
		}
	}
}
