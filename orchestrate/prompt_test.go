package orchestrate_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/charmbracelet/x/exp/golden"

	"orcr/orchestrate"
	"orcr/planning"
)

func TestExamplePlanParses(t *testing.T) {
	// The prompt teaches the format by this example; it must be a valid plan.
	p, err := planning.Parse(orchestrate.ExamplePlan(), planning.Options{Catalog: planning.Default()})
	if err != nil {
		t.Fatalf("parse:\n%v", err)
	}
	if len(p.Milestones) != 3 || p.Milestones[1].Depends[0] != "M1" || p.Milestones[2].Depends[0] != "M1" {
		t.Fatalf("the example should show a contract milestone and two parallel ones: %+v", p.Milestones)
	}
}

func leadPrompt(t *testing.T) orchestrate.LeadPrompt {
	t.Helper()
	r, err := orchestrate.NewRecord("csv-import", "import CSV files into the contacts table", "/home/ana/code/app", "claude:claude-opus-5", t0)
	if err != nil {
		t.Fatal(err)
	}
	p, err := orchestrate.NewLeadPrompt(r, planning.Default())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLeadPromptRenders(t *testing.T) {
	tmpl, err := orchestrate.LoadLeadTemplate(filepath.Join(t.TempDir(), "none.md"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := orchestrate.RenderLeadPrompt(tmpl, leadPrompt(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"    /home/ana/code/app/.orcr/plans/csv-import.md\n\nThen stop.",
		"> import CSV files into the contacts table",
		"never how-to", "A reason for every split", "Contract first, scaffold first", "One milestone when the change is small",
		"claude    claude-opus-5 ", "premium: allowed",
		"## M3 · Contacts sink",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("prompt lacks %q", want)
		}
	}
	golden.RequireEqual(t, []byte(out))
}

func TestLeadPromptUserOverride(t *testing.T) {
	path := filepath.Join(t.TempDir(), "plan-lead.md")
	if err := os.WriteFile(path, []byte("Plan {{.Name}}: write {{.File}}.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tmpl, err := orchestrate.LoadLeadTemplate(path)
	if err != nil {
		t.Fatal(err)
	}
	out, err := orchestrate.RenderLeadPrompt(tmpl, leadPrompt(t))
	if err != nil || out != "Plan csv-import: write /home/ana/code/app/.orcr/plans/csv-import.md.\n" {
		t.Fatalf("%q %v", out, err)
	}

	if err := os.WriteFile(path, []byte("line one\n{{.Name}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := orchestrate.LoadLeadTemplate(path); err == nil || !strings.Contains(err.Error(), path+":2:") {
		t.Fatalf("a broken template: %v", err)
	}
	if err := os.WriteFile(path, []byte("{{.Nmae}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tmpl, err = orchestrate.LoadLeadTemplate(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := orchestrate.RenderLeadPrompt(tmpl, leadPrompt(t)); err == nil || !strings.Contains(err.Error(), "Nmae") {
		t.Fatalf("an unknown field: %v", err)
	}
}

func TestDefaultLeadTemplatePath(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", "/cfg")
	if got := orchestrate.DefaultLeadTemplatePath(); got != "/cfg/orcr/templates/plan-lead.md" {
		t.Errorf("template path %s", got)
	}
	if got := planning.DefaultUserCatalogPath(); got != "/cfg/orcr/catalog.toml" {
		t.Errorf("catalog path %s", got)
	}
}
