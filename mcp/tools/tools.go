// Package tools is `orcr mcp`: a stdio MCP server (github.com/modelcontextprotocol/go-sdk)
// whose tools are orcr's socket methods (DESIGN §17). It is a client of the orcr socket
// like the CLI: the agent's program starts it as its child, so every call it makes
// carries the agent's identity, which the server verifies by the peer's credentials and
// pane ancestry. Each tool's input schema is its method's params schema
// (wire.ParamsSchema), its arguments are decoded by the method's own strict decoder, and
// the session's scope (granted by mcp.session) is enforced before the call is made.
package tools

import (
	"orcr/core/wire"
	planapi "orcr/orchestrate/api"
	runapi "orcr/orchestrate/run/api"
)

// kind is what a tool does to the fleet, as the scopes see it.
type kind int

const (
	// reads changes nothing: every scope may call it (self only within its lineage).
	reads kind = iota
	// acts changes agents: self within its subtree, act anywhere, read never.
	acts
	// reports is run done / run ask: the caller reports on its own milestone (the run
	// and the coder are its identity); self and act, never read.
	reports
)

// tool is one MCP tool: its name, the method it calls, what it does as the scopes see
// it and the description a model reads.
type tool struct {
	name   string
	method string
	kind   kind
	desc   string
}

// table lists the tools in the order a model sees them.
var table = []tool{
	{"agent_list", wire.MethodAgentList, reads,
		"List orcr agents (coding agents and programs running in panes orcr owns): path, state (queued, starting, working, blocked, done, idle, exited, killed, failed, lost), provider, model, usage. `glob` selects by path: '*' is one path segment, '**' any depth; a glob without a leading '/' is relative to your own path (your children), '/x/**' is absolute. Use `states` to keep e.g. only blocked agents. In scope self you see only your lineage: your ancestors, yourself and your descendants."},
	{"agent_get", wire.MethodAgentGet, reads,
		"One agent's full record by `target`: its id, an id prefix, or its path (relative to your own path unless it starts with '/'). Shows its state, what it is blocked on (a permission prompt with its options, a question, a usage limit), its last message, usage and cost."},
	{"agent_read", wire.MethodAgentRead, reads,
		"Read what an agent shows: its screen text (`lines`: the last N lines with scrollback), or its `lastMessage` (the final answer of its last turn), or its `transcript` path. Use lastMessage to collect a finished child's result."},
	{"agent_run", wire.MethodAgentRun, acts,
		"Start a new agent. `path` names it: relative paths are created under your own path (a child of yours), e.g. 'tests' becomes YOUR_PATH/tests. `provider` is claude, codex, opencode, pi or shell (shell runs `argv`); `prompt` is its first message; `cwd` its folder (absolute); `role` a role template. The agent is queued, then started when admission allows; follow it with agent_wait and collect its answer with agent_read (lastMessage). In scope self the child is capped to scope self too."},
	{"agent_send", wire.MethodAgentSend, acts,
		"Type `text` into an agent's pane; set `enter` to press Enter after it (send a message to an idle or done agent), or press named `keys` (e.g. [\"Escape\"], [\"C-c\"]). To answer a permission prompt or question an agent is blocked on, use agent_answer instead."},
	{"agent_answer", wire.MethodAgentAnswer, acts,
		"Answer what a blocked agent waits for, by meaning: `allow` (once), `always`, `deny` (optionally with `text` saying why), a 1-based `option` as the prompt shows it, or free `text` for a question. Nothing is sent when the prompt is no longer on its screen."},
	{"agent_wait", wire.MethodAgentWait, reads,
		"Wait until every agent matching `glob` reaches a state: `until` is done (its turn finished), idle, blocked, exited or settled (done, blocked or ended; the default). `timeoutSeconds` bounds the wait (0: none); the answer says timedOut when it ran out. Progress is reported while waiting, and cancelling the call stops the wait."},
	{"agent_kill", wire.MethodAgentKill, acts,
		"Stop every running agent matching `glob` (a path, or a glob like 'tests/**'; relative to your own path). `dryRun` lists what would be stopped without stopping it."},
	{"plan_new", planapi.MethodPlanNew, acts,
		"Start a plan: `name` (lowercase, e.g. csv-import), the user's `request` in their words, `repo` (an absolute folder inside the git repository). `lead` is 'self' to become the plan's lead yourself (you then write .orcr/plans/NAME.md in the plan format of `orcr plan format` and are woken with the run's events), or provider[:model] for orcr to start a lead agent. In scope self only lead 'self' is allowed."},
	{"plan_show", planapi.MethodPlanGet, reads,
		"One plan by `name`: its state (drafting, drafted, approved, rejected, failed), its lead, the milestones parsed from .orcr/plans/NAME.md and every problem of the file by line. Fix the problems it lists before asking the user to approve."},
	{"run_status", runapi.MethodRunStatus, reads,
		"One run by `name` (the plan's name): per milestone its state, coder, model, rounds and time, what each waits on, the coder pool, and the messages waiting for the lead."},
	{"run_dispatch", runapi.MethodRunDispatch, acts,
		"As a run's lead: start ready `milestones` (their ids, e.g. [\"M2\",\"M3\"]) of run `name` on free coders. Milestones whose dependencies are not merged yet are refused with the reason."},
	{"run_answer", runapi.MethodRunAnswer, acts,
		"As a run's lead: answer the question a milestone's coder asked (`name` the run, `milestone` its id, `text` the answer); the coder continues with it. Ask the user first when the answer is theirs to give (scope, product decisions, credentials)."},
	{"run_done", runapi.MethodRunDone, reports,
		"As a coder of a run: say your `milestone` is committed and ready for its check (and review). The run is taken from your identity. Commit first; optional `text` is a short note for the lead."},
	{"run_ask", runapi.MethodRunAsk, reports,
		"As a coder of a run: ask the lead a question about your `milestone` (`text`); the milestone pauses until the answer comes back as a message to you."},
}
