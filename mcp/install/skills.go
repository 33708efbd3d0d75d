package install

import "strings"

// The three skills orcr installs (DESIGN §17), written once and wrapped in each
// provider's own file format. BIN stands for how the agent calls orcr.

type skill struct {
	name, desc, hint, body string
}

var skills = []skill{
	{name: "orcr-plan", hint: "what to build",
		desc: "Plan work for a team of coding agents with orcr: this session becomes the lead of a new orcr plan, writes .orcr/plans/NAME.md in orcr's plan format and registers it with `orcr plan new NAME --lead self`. Use when the user asks to plan or split work for several agents, or types /orcr-plan.",
		body: `You become the lead of an orcr plan. orcr runs coding agents (claude, codex, opencode,
pi) as a team: a plan splits the work into milestones, coders build them in git
worktrees, checks and a reviewer gate each one, and one feature branch comes out.

The request: $ARGUMENTS

1. Check that this session runs under orcr: run ` + "`echo $ORCR_ID`" + `. If it prints nothing, stop
   and tell the user: "This session is not running under orcr, so it cannot lead a plan.
   Start it under orcr — ` + "`orcr agent run me --provider PROVIDER --cwd \"$PWD\"`" + ` then
   ` + "`orcr agent attach me`" + ` — and type /orcr-plan again." Do nothing else.
2. If the request is empty or ambiguous (what is in scope, product decisions, which
   repository), ask the user before planning. Ask only what changes the plan.
3. Learn the format and the models: run ` + "`BIN plan format`" + ` and ` + "`BIN catalog`" + `.
4. Read as much of the code as you need to split the work well. Change nothing but the
   plan file.
5. Pick a short NAME (lowercase letters, digits, dashes: e.g. csv-import) and write the
   plan to .orcr/plans/NAME.md in the repository's top folder
   (` + "`git rev-parse --show-toplevel`" + `), exactly in the format: goals and acceptance
   criteria, never how-to; a tier per milestone; real dependencies only.
6. Register it, with you as its lead:
   ` + "`BIN plan new NAME \"<the request in the user's words>\" --lead self --repo \"$(git rev-parse --show-toplevel)\"`" + `
7. Run ` + "`BIN plan show NAME`" + `. If it lists problems (each names its line), fix the file
   and show it again until there are none.
8. Show the user the milestones (id, title, tier, depends) and ask them to approve. When
   they do: ` + "`BIN plan approve NAME`" + `, then follow /orcr-run. If they want changes, edit
   the file and show it again.

If orcr's MCP tools are available (plan_new, plan_show), you may use them instead of
the commands: plan_new with lead "self".`},
	{name: "orcr-run", hint: "plan name",
		desc: "Start and lead the run of an approved orcr plan: `orcr run start NAME --lead self`, then act on the run's messages (dispatch ready milestones, answer coders' questions, retry failures) until it is done. Use after /orcr-plan, or when the user says to run a plan.",
		body: `You lead the run of an approved orcr plan: the coders build; you decide what starts
next, answer their questions and judge failures. orcr does everything in between.

The plan: $ARGUMENTS (if empty: the plan you lead in ` + "`BIN plan ls`" + `).

1. ` + "`BIN plan ls`" + `: if the plan is drafted, show it to the user and ask them to approve;
   when they do, ` + "`BIN plan approve NAME`" + `. Never approve for them.
2. Start it from this session, so that you are its lead:
   ` + "`BIN run start NAME --lead self`" + ` (the user may ask for ` + "`--coders N`" + ` or
   ` + "`--reviewer claude`" + `). If ` + "`echo $ORCR_ID`" + ` prints nothing, this session is not under
   orcr: tell the user to start it with ` + "`orcr agent run me --provider PROVIDER`" + ` first.
3. Dispatch what is ready now: ` + "`BIN run status NAME`" + ` shows each milestone's state;
   ` + "`BIN run dispatch NAME M1 M2`" + ` starts ready ones. Then END YOUR TURN. Do not wait,
   poll or sleep: orcr types a message into this session whenever something happens.
4. Each message starts with "orcr run NAME:" and lists what happened. Act on it, then end
   your turn again:
   - a milestone merged and others are ready: ` + "`BIN run dispatch NAME M3 …`" + `
   - a coder asks a question: ` + "`BIN run answer NAME M2 \"answer\"`" + ` — when the answer is
     the user's to give (scope, product behaviour, credentials, money), ask the user first
   - a milestone failed its check or review too often: ` + "`BIN run retry NAME M2 --tier high`" + `
     or ` + "`BIN run hold NAME M2`" + ` and tell the user why
5. When every milestone is merged, tell the user, and ask before
   ` + "`BIN run finish NAME`" + ` (it pushes feature/NAME and opens the pull request).

If orcr's MCP tools are available (run_status, run_dispatch, run_answer), you may use
them instead of the commands.`},
	{name: "orcr-status", hint: "plan or glob",
		desc: "Report what orcr's agents, plans and runs are doing: which agents run, which wait for the user and on what, each run's milestones. Changes nothing. Use when the user asks how the agents or a run are doing, or types /orcr-status.",
		body: `Report the state of orcr's agents, plans and runs to the user. Change nothing.

What to look at: $ARGUMENTS (if empty: everything).

1. ` + "`BIN agent ls`" + ` — every agent with its state, provider, model, age, tokens and cost.
2. ` + "`BIN plan ls`" + ` — every plan and its state.
3. For each run (` + "`BIN run status NAME`" + ` for each plan that has one): milestones by state,
   what each waits on, the coders.
4. For agents that are blocked: ` + "`BIN agent get PATH`" + ` says what they wait for.

Summarise in a few lines: what is working, what is done, what failed, and what waits for
the user (a permission prompt or a question — say the exact command that answers it,
e.g. ` + "`orcr agent answer PATH --allow`" + ` or ` + "`orcr run answer NAME M2 \"…\"`" + `).
If orcr is not running (` + "`orcr agent ls`" + ` says so), say how to start it: ` + "`orcr serve`" + `.`},
}

// text is the skill's body for an agent calling orcr as bin.
func (s skill) text(bin string) string { return strings.ReplaceAll(s.body, "BIN ", bin+" ") }

// yamlString quotes s for a YAML front matter value.
func yamlString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
