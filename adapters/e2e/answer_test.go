package e2e_test

import (
	"encoding/json"
	"fmt"
	"orcr/testutil/rig"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/clis"
	"orcr/testutil/modelserver"
	"orcr/testutil/wait"
)

// answerRig is orcr on its tmux host with the real claude CLI against a scripted
// model server, in a work dir holding build/keep.o for commands to (not) remove.
type answerRig struct{ *rig.Rig }

func newClaudeAnswerRig(t testing.TB) *answerRig {
	t.Helper()
	e := newTmuxOrcr(t)
	e.Claude()
	if os.Getenv("ORCR_TEST_DEBUG") != "" {
		e.Vars = append(e.Vars, "ORCR_DEBUG=1")
	}
	e.Serve()
	return &answerRig{e}
}

// newTmuxOrcr is an orcr installation on its own tmux server. At the end (after
// every server the test started has stopped, before its directories are removed)
// the tmux server is killed and the test waits until every process it left is gone.
func newTmuxOrcr(t testing.TB, extra ...string) *rig.Rig {
	t.Helper()
	clis.Program(t, "tmux", "apt-get install tmux")
	e := rig.New(t, append([]string{"ORCR_HOST=tmux"}, extra...)...)
	t.Cleanup(func() { stopAll(e) })
	return e
}

// stopAll ends everything the test started on e's tmux server: the panes (and the
// programs in them, which may still write into the test's directories as they exit,
// claude into its config dir) and the processes they left behind, found by the
// test's directory in their environment, command line or working directory.
func stopAll(e *rig.Rig) {
	exec.Command("tmux", "-S", filepath.Join(e.Home, "tmux.sock"), "kill-server").Run()
	if wait.Until(15*time.Second, func() bool { return len(procsOf(e.Dir)) == 0 }) {
		return
	}
	left := procsOf(e.Dir)
	for _, p := range left {
		syscall.Kill(p.pid, syscall.SIGKILL)
	}
	wait.Until(5*time.Second, func() bool { return len(procsOf(e.Dir)) == 0 })
	e.T.Errorf("processes outlived the test by 15s (killed): %v", left)
}

type proc struct {
	pid int
	cmd string
}

func (p proc) String() string { return fmt.Sprintf("%d %.80s", p.pid, p.cmd) }

// procsOf lists the processes, other than this one, whose environment, command line
// or working directory names dir.
func procsOf(dir string) []proc {
	ents, _ := os.ReadDir("/proc")
	var out []proc
	for _, en := range ents {
		pid, err := strconv.Atoi(en.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		base := filepath.Join("/proc", en.Name())
		env, _ := os.ReadFile(filepath.Join(base, "environ"))
		cmd, _ := os.ReadFile(filepath.Join(base, "cmdline"))
		cwd, _ := os.Readlink(filepath.Join(base, "cwd"))
		if len(cmd) == 0 {
			continue // a zombie: it writes nothing any more
		}
		if strings.Contains(string(env), dir) || strings.Contains(string(cmd), dir) || strings.HasPrefix(cwd, dir) {
			out = append(out, proc{pid, strings.ReplaceAll(string(cmd), "\x00", " ")})
		}
	}
	return out
}

// mkBuild (re)creates build/keep.o, the file `rm -rf build` would remove.
func (r *answerRig) mkBuild() string {
	r.T.Helper()
	keep := filepath.Join(r.Work, "build", "keep.o")
	if err := os.MkdirAll(filepath.Dir(keep), 0o755); err != nil {
		r.T.Fatal(err)
	}
	os.WriteFile(keep, []byte("obj"), 0o644)
	return keep
}

func bashTurn(cmd string) modelserver.Turn {
	return modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "Bash", Input: map[string]any{"command": cmd, "description": "clean the build"}}},
		Usage: modelserver.Usage{Input: 100, Output: 10}}
}

// blockedOn waits until target is blocked with options on screen.
func (r *answerRig) blockedOn(target, kind string) wire.Agent {
	r.T.Helper()
	return r.WaitAgent(target, 90*time.Second, "blocked on a "+kind, func(a wire.Agent) bool {
		return a.State == wire.StateBlocked && a.Blocked != nil && a.Blocked.Kind == kind && len(a.Blocked.Options) > 0
	})
}

func (r *answerRig) answer(args ...string) wire.AnswerResult {
	r.T.Helper()
	var res wire.AnswerResult
	argv := append(append([]string{"agent", "answer"}, args...), "--json")
	if !slices.Contains(args, "--timeout") {
		// The answer returns once the prompt leaves; its 5 s default for that was too
		// short for a real claude redrawing at a load of 28 (the plan was rejected, the
		// answer reported not taken), so it scales like every other wait.
		argv = append(argv, "--timeout", wait.Scale(5*time.Second).String())
	}
	got := r.Run(argv...)
	if got.Code != 0 {
		r.T.Fatalf("orcr %s: exit %d\nstdout: %s\nstderr: %s\nscreen:\n%s", strings.Join(argv, " "), got.Code, got.Out, got.Err,
			r.Run("agent", "read", args[0]).Out)
	}
	out := got.Out
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		r.T.Fatalf("answer output %q: %v", out, err)
	}
	return res
}

// refused runs an answer that must fail with code, and returns its message.
func (r *answerRig) refused(code string, args ...string) string {
	r.T.Helper()
	res := r.Run(append([]string{"agent", "answer"}, args...)...)
	if res.Code == 0 || !strings.Contains(res.Err, "["+code+"]") {
		r.T.Fatalf("orcr agent answer %v: exit %d, want code %s\nstdout %s\nstderr %s", args, res.Code, code, res.Out, res.Err)
	}
	return res.Err
}

func optionLabels(b *wire.Blocked) string {
	var out []string
	for _, o := range b.Options {
		out = append(out, o.Label+"="+o.Meaning)
	}
	return strings.Join(out, " | ")
}

// TestClaudeEditDenyEndsTurn: a "No" to claude's Write prompt leaves the file
// unwritten and the agent done — claude reports that turn end with no hook and no
// "Interrupted" line, so a run waiting on the agent would otherwise wait forever.
func TestClaudeEditDenyEndsTurn(t *testing.T) {
	t.Parallel()
	r := newClaudeAnswerRig(t)
	file := filepath.Join(r.Work, "x.txt")
	r.Models.Push(modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "Write", Input: map[string]any{"file_path": file, "content": "hi\n"}}},
		Usage: modelserver.Usage{Input: 100, Output: 10}})
	r.Must("agent", "run", "edit/a", "--provider", "claude", "--cwd", r.Work, "--prompt", "write x",
		"--", "--permission-mode", "default")
	r.blockedOn("edit/a", wire.BlockedPermission)
	r.answer("edit/a", "--deny")
	r.WaitAgent("edit/a", 20*time.Second, "done after the refused write", func(a wire.Agent) bool { return a.State == wire.StateDone })
	if _, err := os.Stat(file); err == nil {
		t.Fatal("the refused write happened")
	}
}

// TestClaudePermissionAnswers: claude 2.1.328's four-option Bash prompt, answered by
// meaning — deny (the command does not run), a server restart while the prompt is up
// (blocked again, same options), allow, always — with the bad inputs refused.
func TestClaudePermissionAnswers(t *testing.T) {
	t.Parallel()
	r := newClaudeAnswerRig(t)
	keep := r.mkBuild()
	r.Models.Push(bashTurn("rm -rf build"))
	r.Must("agent", "run", "perm/a", "--provider", "claude", "--cwd", r.Work, "--prompt", "remove the build dir",
		"--", "--permission-mode", "default")
	a := r.blockedOn("perm/a", wire.BlockedPermission)
	b := a.Blocked
	want := "Yes=allow_once | Yes, and always allow access to " + filepath.Join(r.Work, "build") + " from this project=allow_always | " +
		"Yes, and switch to auto mode=other | No=deny"
	if got := optionLabels(b); got != want {
		t.Fatalf("options\n got %s\nwant %s", got, want)
	}
	if b.Detail != "Bash(rm -rf build)" || b.Options[3].Key != "4" {
		t.Fatalf("blocked %+v", b)
	}

	// Bad input, each with a stable code and the options listed.
	if msg := r.refused(wire.CodeOptionRange, "perm/a", "--option", "7"); !strings.Contains(msg, "4. No") {
		t.Fatalf("out of range does not list the options: %s", msg)
	}
	r.refused(wire.CodeInvalidParams, "perm/a", "--allow", "--deny")
	r.refused(wire.CodeInvalidParams, "perm/a", "--allow", "--text", "why")

	// A restart while the prompt is shown: re-adopted blocked, same options.
	r.Stop()
	r.Serve()
	a = r.WaitAgent("perm/a", 20*time.Second, "re-adopted", func(a wire.Agent) bool { return a.PaneID != "" })
	if a.State != wire.StateBlocked || a.Blocked == nil || optionLabels(a.Blocked) != want {
		t.Fatalf("after restart: %s %q blocked %+v", a.State, a.StateReason, a.Blocked)
	}

	// Deny presses the real "No": the command does not run.
	res := r.answer("perm/a", "--deny")
	if len(res.Answers) != 1 || res.Answers[0].Option == nil || res.Answers[0].Option.Label != "No" ||
		res.Answers[0].Agent.State == wire.StateBlocked {
		t.Fatalf("deny: %+v", res)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("denied command ran: %v", err)
	}
	r.WaitAgent("perm/a", 20*time.Second, "done after the refusal", func(a wire.Agent) bool { return a.State == wire.StateDone })
	r.refused(wire.CodeNotBlocked, "perm/a", "--allow")
	scr := r.Must("agent", "read", "perm/a")
	if strings.Contains(scr, "auto mode on") || strings.Contains(scr, "⏵⏵ auto") {
		t.Fatalf("claude switched mode:\n%s", scr)
	}

	// Allow once: the command runs.
	r.Models.Push(bashTurn("rm -rf build"), modelserver.Turn{Text: "Removed build.", Usage: modelserver.Usage{Input: 20, Output: 7}})
	r.Must("agent", "send", "perm/a", "try again")
	r.blockedOn("perm/a", wire.BlockedPermission)
	res = r.answer("perm/a", "--allow")
	if res.Answers[0].Option.Label != "Yes" {
		t.Fatalf("allow chose %+v", res.Answers[0].Option)
	}
	r.Must("agent", "wait", "perm/a", "--until", "done", "--timeout", "60s")
	if _, err := os.Stat(keep); !os.IsNotExist(err) {
		t.Fatalf("allowed command did not run: %v\nanswer %+v\nscreen:\n%s", err, res, r.Must("agent", "read", "perm/a"))
	}
	// Usage is read to the end of the turn before done is published.
	got := r.Agent("perm/a")
	if got.LastMessage != "Removed build." || got.Usage.OutputTokens < 27 {
		t.Fatalf("at done: last %q usage %+v", got.LastMessage, got.Usage)
	}

	// Always: the "always allow access" option; the next such command needs no prompt.
	keep = r.mkBuild()
	r.Models.Push(bashTurn("rm -rf build"), modelserver.Turn{Text: "Removed it again.", Usage: modelserver.Usage{Input: 20, Output: 5}})
	r.Must("agent", "send", "perm/a", "and again")
	r.blockedOn("perm/a", wire.BlockedPermission)
	res = r.answer("perm/a", "--always")
	if res.Answers[0].Option.Meaning != wire.MeaningAllowAlways || !strings.HasPrefix(res.Answers[0].Option.Label, "Yes, and always allow") {
		t.Fatalf("always chose %+v", res.Answers[0].Option)
	}
	r.Must("agent", "wait", "perm/a", "--until", "done", "--timeout", "60s")
	if _, err := os.Stat(keep); !os.IsNotExist(err) {
		t.Fatalf("always-allowed command did not run: %v", err)
	}
	scr = r.Must("agent", "read", "perm/a")
	if strings.Contains(scr, "auto mode on") {
		t.Fatalf("--always switched claude to auto mode:\n%s", scr)
	}
}

// TestClaudePlanAnswers: a plan waiting for approval is blocked kind plan with the
// plan text; rejecting with feedback gets the feedback into the model's next request;
// approving lets claude go on.
func TestClaudePlanAnswers(t *testing.T) {
	t.Parallel()
	r := newClaudeAnswerRig(t)
	plan := "# Split the parser\n\n1. Move tokens into a lexer.\n2. Keep the old API as a thin wrapper."
	u := modelserver.Usage{Input: 50, Output: 10}
	r.Models.Push(modelserver.ClaudePlan(plan, u), modelserver.ClaudeExitPlan(u))
	r.Must("agent", "run", "plan/a", "--provider", "claude", "--cwd", r.Work, "--prompt", "plan the parser split",
		"--", "--permission-mode", "plan")
	a := r.blockedOn("plan/a", wire.BlockedPlan)
	// The text is the plan as claude draws it: its markdown heading shows with its "# "
	// or, once claude has rendered it, as a bold line without (both seen under load).
	if a.Blocked.Text != plan && a.Blocked.Text != strings.TrimPrefix(plan, "# ") {
		t.Fatalf("plan text %q, want %q", a.Blocked.Text, plan)
	}
	if got := optionLabels(a.Blocked); got != "Yes, and use auto mode=other | Yes, manually approve edits=allow_once | Tell Claude what to change=deny" {
		t.Fatalf("plan options %s", got)
	}
	if msg := r.refused(wire.CodeNoSuchOption, "plan/a", "--always"); !strings.Contains(msg, "Tell Claude what to change") {
		t.Fatalf("--always refusal lists no options: %s", msg)
	}

	// Reject with feedback; the model answers with a second plan.
	plan2 := "# Split the parser, keeping the old API\n\n1. Lexer.\n2. Old API kept as is."
	r.Models.Push(modelserver.ClaudePlan(plan2, u), modelserver.ClaudeExitPlan(u))
	res := r.answer("plan/a", "--deny", "--text", "keep the old API")
	if res.Answers[0].Option.Label != "Tell Claude what to change" {
		t.Fatalf("deny chose %+v", res.Answers[0].Option)
	}
	r.WaitAgent("plan/a", 60*time.Second, "the second plan", func(a wire.Agent) bool {
		return a.State == wire.StateBlocked && a.Blocked != nil && a.Blocked.Kind == wire.BlockedPlan && a.Blocked.Text == plan2
	})
	found := false
	for _, q := range r.Models.Requests() {
		if q.Scripted && strings.Contains(string(q.Body), "keep the old API") && strings.Contains(string(q.Body), "tool_result") {
			found = true
		}
	}
	if !found {
		t.Fatal("the feedback did not reach the model's next request")
	}

	// Approve: "Yes, manually approve edits"; claude goes on with the next turn.
	r.Models.Push(modelserver.Turn{Text: "Starting on the lexer.", Usage: u})
	res = r.answer("plan/a", "--allow")
	if res.Answers[0].Option.Label != "Yes, manually approve edits" {
		t.Fatalf("allow chose %+v", res.Answers[0].Option)
	}
	r.WaitAgent("plan/a", 60*time.Second, "done after approval", func(a wire.Agent) bool {
		return a.State == wire.StateDone && a.LastMessage == "Starting on the lexer."
	})
}

// TestShellQuestionAnswers: a plain program asking "[y/N]" is blocked kind question;
// a glob matching two such agents is refused without --all; --text types the answer.
func TestShellQuestionAnswers(t *testing.T) {
	t.Parallel()
	e := newTmuxOrcr(t)
	e.Serve()
	ask := `printf 'Proceed? [y/N] '; read a; echo "got $a"; exec cat`
	for _, p := range []string{"s/q1", "s/q2"} {
		e.Must("agent", "run", p, "--", "sh", "-c", ask)
	}
	for _, p := range []string{"s/q1", "s/q2"} {
		a := e.WaitAgent(p, 20*time.Second, "blocked on the question", func(a wire.Agent) bool { return a.State == wire.StateBlocked })
		if a.Blocked.Kind != wire.BlockedQuestion || a.Blocked.Question != "Proceed? [y/N]" || len(a.Blocked.Options) != 2 {
			t.Fatalf("%s blocked %+v", p, a.Blocked)
		}
	}
	r := &answerRig{Rig: e}
	if msg := r.refused(wire.CodeSeveralBlocked, "s/*", "--allow"); !strings.Contains(msg, "s/q1") || !strings.Contains(msg, "s/q2") {
		t.Fatalf("several blocked lists no agents: %s", msg)
	}
	r.answer("s/q1", "--text", "yes")
	e.WaitAgent("s/q1", 10*time.Second, "the answer typed", func(a wire.Agent) bool { return a.State != wire.StateBlocked })
	shows := func(p, want string) {
		if !wait.Until(10*time.Second, func() bool { return strings.Contains(e.Must("agent", "read", p), want) }) {
			t.Fatalf("%s never showed %q:\n%s", p, want, e.Must("agent", "read", p))
		}
	}
	shows("s/q1", "got yes")
	res := r.answer("s/*", "--deny", "--all")
	if len(res.Answers) != 1 || res.Answers[0].Agent.Path != "s/q2" {
		t.Fatalf("--all answered %+v", res.Answers)
	}
	shows("s/q2", "got n")
	r.refused(wire.CodeNotBlocked, "s/q2", "--allow")
	r.refused(wire.CodeNotFound, "nope/*", "--allow")
}

// TestCodexPermissionAnswers: codex 0.171's approval answered by meaning.
func TestCodexPermissionAnswers(t *testing.T) {
	t.Parallel()
	e := newTmuxOrcr(t)
	e.Codex()
	e.Serve()
	r := &answerRig{e}
	srv, work := e.Models, e.Work
	execTurn := modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "exec_command", Input: map[string]any{"cmd": "rm -rf build",
		"sandbox_permissions": "require_escalated", "justification": "Remove the build directory?"}}},
		Usage: modelserver.Usage{Input: 100, Output: 5}}
	keep := r.mkBuild()
	srv.Push(execTurn)
	e.Must("agent", "run", "cx/a", "--provider", "codex", "--cwd", work, "--prompt", "clean the build", "--", "-a", "on-request")
	a := r.blockedOn("cx/a", wire.BlockedPermission)
	want := "Yes, proceed=allow_once | Yes, and don't ask again for commands that start with `rm -rf build`=allow_always | " +
		"No, and tell Codex what to do differently=deny"
	if got := optionLabels(a.Blocked); got != want {
		t.Fatalf("options\n got %s\nwant %s", got, want)
	}
	res := r.answer("cx/a", "--deny")
	if res.Answers[0].Option.Key != "esc" {
		t.Fatalf("deny chose %+v", res.Answers[0].Option)
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("denied command ran: %v", err)
	}
	r.WaitAgent("cx/a", 30*time.Second, "done after the refusal", func(a wire.Agent) bool { return a.State == wire.StateDone })

	srv.Push(execTurn, modelserver.Turn{Text: "Removed build.", Usage: modelserver.Usage{Input: 120, Output: 4}})
	e.Must("agent", "send", "cx/a", "do it after all")
	r.blockedOn("cx/a", wire.BlockedPermission)
	res = r.answer("cx/a", "--allow")
	if res.Answers[0].Option.Key != "y" {
		t.Fatalf("allow chose %+v", res.Answers[0].Option)
	}
	r.Must("agent", "wait", "cx/a", "--until", "done", "--timeout", "60s")
	if _, err := os.Stat(keep); !os.IsNotExist(err) {
		t.Fatalf("allowed command did not run: %v", err)
	}

	keep = r.mkBuild()
	srv.Push(execTurn, modelserver.Turn{Text: "Removed it again.", Usage: modelserver.Usage{Input: 130, Output: 4}})
	e.Must("agent", "send", "cx/a", "and again")
	r.blockedOn("cx/a", wire.BlockedPermission)
	res = r.answer("cx/a", "--always")
	if res.Answers[0].Option.Key != "p" {
		t.Fatalf("always chose %+v", res.Answers[0].Option)
	}
	r.WaitAgent("cx/a", 60*time.Second, "done after always", func(a wire.Agent) bool {
		return a.State == wire.StateDone && a.LastMessage == "Removed it again."
	})
	if _, err := os.Stat(keep); !os.IsNotExist(err) {
		t.Fatalf("always-allowed command did not run: %v", err)
	}
}

// TestClaudeSendToPermissionPrompt: a steering message sent to claude while it waits
// on `Bash(rm -rf build)` is refused with agent_blocked (before, its text and Enter
// landed in the menu: the command ran and the text was lost). build/ survives, the
// prompt stays up, and the message goes as the deny reason through agent answer,
// reaching the model as the refused tool call's result.
func TestClaudeSendToPermissionPrompt(t *testing.T) {
	t.Parallel()
	r := newClaudeAnswerRig(t)
	keep := r.mkBuild()
	r.Models.Push(bashTurn("rm -rf build"))
	r.Must("agent", "run", "cl/rm", "--provider", "claude", "--cwd", r.Work, "--prompt", "remove the build dir",
		"--", "--permission-mode", "default")
	r.blockedOn("cl/rm", wire.BlockedPermission)

	const steer = "please also list the files first"
	res := r.Run("agent", "send", "cl/rm", steer)
	if res.Code == 0 || !strings.Contains(res.Err, "["+wire.CodeAgentBlocked+"]") {
		t.Fatalf("send to a blocked claude: exit %d, want code %s\nstdout %s\nstderr %s", res.Code, wire.CodeAgentBlocked, res.Out, res.Err)
	}
	for _, want := range []string{"Bash(rm -rf build)", `orcr agent answer cl/rm --deny --text "…"`} {
		if !strings.Contains(res.Err, want) {
			t.Fatalf("the refusal does not say %q:\n%s", want, res.Err)
		}
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("build/ is gone after the refused send: %v", err)
	}
	if a := r.Agent("cl/rm"); a.State != wire.StateBlocked {
		t.Fatalf("after the refused send: %s (%s), want blocked", a.State, a.StateReason)
	}
	if scr := r.Must("agent", "read", "cl/rm"); !strings.Contains(scr, "Do you want to proceed?") || strings.Contains(scr, steer) {
		t.Fatalf("the prompt is not on screen as it was:\n%s", scr)
	}

	// The steer goes as the reason of a "No".
	r.Models.Push(modelserver.Turn{Text: "Listing first.", Usage: modelserver.Usage{Input: 20, Output: 5}})
	ans := r.answer("cl/rm", "--deny", "--text", steer)
	if ans.Answers[0].Option == nil || ans.Answers[0].Option.Meaning != wire.MeaningDeny {
		t.Fatalf("deny chose %+v", ans.Answers[0].Option)
	}
	found := wait.Until(60*time.Second, func() bool {
		for _, q := range r.Models.Requests() {
			if q.Scripted && toolResultSays(q.Body, steer) {
				return true
			}
		}
		return false
	})
	if !found {
		t.Fatalf("the deny reason did not reach the model as the tool call's result\nscreen:\n%s", r.Must("agent", "read", "cl/rm"))
	}
	if _, err := os.Stat(keep); err != nil {
		t.Fatalf("build/ is gone after the deny: %v", err)
	}
}

// toolResultSays reports whether a Messages API request carries a tool_result block
// whose content holds text: what claude answers the model for a refused tool call.
func toolResultSays(body []byte, text string) bool {
	var req struct {
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if json.Unmarshal(body, &req) != nil {
		return false
	}
	for _, m := range req.Messages {
		var blocks []map[string]any
		if json.Unmarshal(m.Content, &blocks) != nil {
			continue
		}
		for _, b := range blocks {
			if b["type"] != "tool_result" {
				continue
			}
			if c, err := json.Marshal(b["content"]); err == nil && strings.Contains(string(c), text) {
				return true
			}
		}
	}
	return false
}
