package orchestrate

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"text/template"

	"orcr/internal/regfile"
	"orcr/planning"
)

//go:embed templates/plan-lead.md
var templatesFS embed.FS

// LeadTemplateName is the file name of the lead's prompt template. The embedded default
// is used unless the user has one at $XDG_CONFIG_HOME/orcr/templates/plan-lead.md
// (DefaultLeadTemplatePath): "plan-lead" rather than "lead", because a run's lead
// (runs/NAME/lead) gets a different prompt and will have its own template beside it.
const LeadTemplateName = "plan-lead.md"

// DefaultLeadTemplatePath is where a user's lead prompt template overrides the default.
func DefaultLeadTemplatePath() string {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, _ := os.UserHomeDir()
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "orcr", "templates", LeadTemplateName)
}

// ExamplePlan is the example plan the prompt shows (and a test parses).
func ExamplePlan() []byte { return planning.ExamplePlan() }

// LeadPrompt is what a lead's prompt template sees. A template names these fields
// ({{.Request}}); naming any other is an error when it is rendered.
type LeadPrompt struct {
	Name    string // the plan's name
	Request string // what the user asked for
	Repo    string // the repository's folder
	File    string // the exact path the lead must write
	Catalog string // the catalog as the `orcr catalog` table
	Example string // an example plan in the format, ending in a newline
}

// NewLeadPrompt fills a LeadPrompt for record r with catalog c.
func NewLeadPrompt(r Record, c *planning.Catalog) (LeadPrompt, error) {
	var table bytes.Buffer
	if err := planning.WriteTable(&table, c); err != nil {
		return LeadPrompt{}, err
	}
	return LeadPrompt{Name: r.Name, Request: r.Request, Repo: r.Repo, File: r.File, Catalog: table.String(), Example: string(ExamplePlan())}, nil
}

// LoadLeadTemplate returns the user's template at userPath, or the embedded default
// when userPath is empty or has no file. A broken user template is an error naming its
// file and line (text/template's own message), never a silent fall back.
func LoadLeadTemplate(userPath string) (*template.Template, error) {
	if userPath != "" {
		b, err := regfile.Read(userPath)
		switch {
		case err == nil:
			t, err := template.New(userPath).Option("missingkey=error").Parse(string(b))
			if err != nil {
				return nil, fmt.Errorf("lead prompt template: %w", err)
			}
			return t, nil
		case !errors.Is(err, fs.ErrNotExist):
			return nil, fmt.Errorf("read lead prompt template: %w", err)
		}
	}
	b, err := templatesFS.ReadFile("templates/" + LeadTemplateName)
	if err != nil {
		return nil, err
	}
	return template.New(LeadTemplateName).Option("missingkey=error").Parse(string(b))
}

// RenderLeadPrompt executes t with p.
func RenderLeadPrompt(t *template.Template, p LeadPrompt) (string, error) {
	var b bytes.Buffer
	if err := t.Execute(&b, p); err != nil {
		return "", fmt.Errorf("render lead prompt: %w", err)
	}
	return b.String(), nil
}
