// Package api holds the workflows feature's wire types and method declarations
// (DESIGN §18). cli and ui import it as wfapi.
package api

import (
	"time"

	"orcr/core/wire"
)

// Method names.
const (
	MethodWorkflowRun    = "workflow.run"
	MethodWorkflowList   = "workflow.list"
	MethodWorkflowShow   = "workflow.show"
	MethodWorkflowStatus = "workflow.status"
	MethodWorkflowEvents = "workflow.events"
	MethodWorkflowStop   = "workflow.stop"
)

// EventWorkflowChanged says a workflow run changed; Data has id, workflow, state,
// steps and stepsDone.
const EventWorkflowChanged = "workflow.changed"

var _ = wire.DeclareEvents(EventWorkflowChanged)

// RunParams starts a run of a workflow (workflow.run). Repo is where the workflow's
// .orcr/workflows is looked for first and where its steps run (the CLI sends its
// folder or --repo).
type RunParams struct {
	Workflow string            `json:"workflow"`
	Repo     string            `json:"repo,omitempty"`
	Vars     map[string]string `json:"vars,omitempty" maxItems:"1024"`
	// Trigger says what started the run: "cli" (the default), "listener NAME",
	// "schedule NAME".
	Trigger string `json:"trigger,omitempty"`
}

// RunView is a workflow run as clients see it.
type RunView struct {
	ID       string            `json:"id"`
	Workflow string            `json:"workflow"`
	File     string            `json:"file"`
	Repo     string            `json:"repo"`
	Vars     map[string]string `json:"vars"`
	Trigger  string            `json:"trigger"`
	State    string            `json:"state"` // running | done | failed | stopped
	Why      string            `json:"why"`
	Steps    []StepView        `json:"steps"`
	// Pending is how many actions are asked for and not yet performed.
	Pending   int        `json:"pending"`
	StartedAt time.Time  `json:"startedAt"`
	EndedAt   *time.Time `json:"endedAt"`
}

// StepView is one step of a run.
type StepView struct {
	Name      string         `json:"name"`
	Kind      string         `json:"kind"`  // shell | agent | role R
	State     string         `json:"state"` // waiting | running | done | skipped | failed
	Why       string         `json:"why"`
	Items     int            `json:"items"`
	Done      int            `json:"done"`
	Failed    int            `json:"failed"`
	Running   int            `json:"running"`
	Agents    []ItemView     `json:"agents"`
	Outputs   map[string]any `json:"outputs"`
	StartedAt *time.Time     `json:"startedAt"`
	EndedAt   *time.Time     `json:"endedAt"`
}

// ItemView is one agent of a step (the first ones of a long for_each).
type ItemView struct {
	I     int    `json:"i"`
	State string `json:"state"`
	Agent string `json:"agent"`
	Error string `json:"error"`
}

// RunResult wraps one run.
type RunResult struct {
	Run RunView `json:"run"`
}

// ListParams lists workflow files (workflow.list) of Repo's .orcr/workflows and the
// user's directory.
type ListParams struct {
	Repo string `json:"repo,omitempty"`
}

// WorkflowInfo is one workflow file.
type WorkflowInfo struct {
	Name      string `json:"name"`
	File      string `json:"file"`
	Steps     int    `json:"steps"`
	Error     string `json:"error"` // why it does not load
	LastRun   string `json:"lastRun"`
	LastState string `json:"lastState"`
}

// ListResult answers workflow.list.
type ListResult struct {
	Workflows []WorkflowInfo `json:"workflows"`
}

// ShowParams names a workflow file (workflow.show).
type ShowParams struct {
	Name string `json:"name"`
	Repo string `json:"repo,omitempty"`
}

// StepDef is one step of a workflow file as read.
type StepDef struct {
	Name        string            `json:"name"`
	Role        string            `json:"role"`
	Provider    string            `json:"provider"`
	Model       string            `json:"model"`
	Prompt      string            `json:"prompt"`
	Argv        []string          `json:"argv"`
	Outputs     map[string]string `json:"outputs"`
	ForEach     string            `json:"forEach"`
	MaxParallel int               `json:"maxParallel"`
	When        string            `json:"when"`
	Identity    string            `json:"identity"`
	OnFailure   string            `json:"onFailure"`
	Needs       []string          `json:"needs"`
}

// ShowResult answers workflow.show.
type ShowResult struct {
	Name      string            `json:"name"`
	File      string            `json:"file"`
	Vars      map[string]string `json:"vars"`
	MaxItems  int               `json:"maxItems"`
	MaxOutput int64             `json:"maxOutputBytes"`
	Steps     []StepDef         `json:"steps"`
}

// StatusParams names a run (its id, or a workflow's name for its newest run); empty
// lists every run (workflow.status).
type StatusParams struct {
	Name string `json:"name,omitempty"`
}

// StatusResult answers workflow.status.
type StatusResult struct {
	Runs []RunView `json:"runs"`
}

// EventsParams pages a run's log (workflow.events).
type EventsParams struct {
	Name  string `json:"name"`
	After uint64 `json:"after,omitempty"`
	Limit int    `json:"limit,omitempty" range:"0,100000"`
}

// Entry is one entry of a run's log: a fact and what it asked for, an action done,
// or a fact refused.
type Entry struct {
	Seq     uint64    `json:"seq"`
	At      time.Time `json:"at"`
	Type    string    `json:"type"` // fact | did | refused
	Kind    string    `json:"kind"` // the fact's kind
	Step    string    `json:"step"`
	I       int       `json:"i"`
	Agent   string    `json:"agent"`
	Text    string    `json:"text"`
	Actions []string  `json:"actions"` // what the step asked for, one line each
}

// EventsResult answers workflow.events; Next is the After of the following page
// (0: none).
type EventsResult struct {
	ID      string  `json:"id"`
	Entries []Entry `json:"entries"`
	Next    uint64  `json:"next"`
}

// StopParams stops a run (its id, or a workflow's newest run).
type StopParams struct {
	Name string `json:"name"`
}

// The API, one declaration per method.
var (
	WorkflowRun    = wire.Declare[RunParams, RunResult](MethodWorkflowRun, "Start a run of a workflow file (.orcr/workflows/NAME.toml or $XDG_CONFIG_HOME/orcr/workflows/NAME.toml).")
	WorkflowList   = wire.Declare[ListParams, ListResult](MethodWorkflowList, "Workflow files and their newest runs.")
	WorkflowShow   = wire.Declare[ShowParams, ShowResult](MethodWorkflowShow, "A workflow file as read: vars, steps, what each needs.")
	WorkflowStatus = wire.Declare[StatusParams, StatusResult](MethodWorkflowStatus, "Workflow runs: each step's state, agents and outputs.")
	WorkflowEvents = wire.Declare[EventsParams, EventsResult](MethodWorkflowEvents, "A workflow run's stored log, page by page.")
	WorkflowStop   = wire.Declare[StopParams, RunResult](MethodWorkflowStop, "Stop a workflow run: its agents are stopped, nothing more starts.")
)
