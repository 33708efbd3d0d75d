package roles_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/modelserver"
	"orcr/testutil/wait"
)

// conversationWith finds the scripted request whose last user turn contains last.
func (r *rig) conversationWith(last string) (modelserver.Request, bool) {
	for _, q := range r.Models.Requests() {
		if q.Scripted && strings.Contains(q.LastUser(), last) {
			return q, true
		}
	}
	return modelserver.Request{}, false
}

// opencode runs the rig's opencode CLI with its environment and fails the test if
// the command does.
func (r *rig) opencode(args ...string) {
	r.T.Helper()
	cmd := exec.Command(lastEnv(r.Vars, "ORCR_OPENCODE_BIN"), args...)
	cmd.Env, cmd.Dir = r.Vars, r.Work
	if out, err := cmd.CombinedOutput(); err != nil {
		r.T.Fatalf("opencode %v: %v\n%s", args, err, out)
	}
}

// TestClaudeHibernateAndResume: GC hibernates an idle claude agent (its process
// stops, its session stays), a send wakes it and the resumed request carries the
// earlier conversation; after a kill, agent resume continues the same session as a
// new record linked to the old. Shell agents and gone session files are refused.
// The refusals and the hibernated path's rules are orcr's, not the CLI's: claude
// alone runs them; the other CLIs' tests prove their own wake and resume.
func TestClaudeHibernateAndResume(t *testing.T) {
	t.Parallel()
	r := newClaudeRig(t)
	hibernateAndResume(t, r, "claude", true)
}

// TestCodexHibernateAndResume is the hibernation and wake through the real codex CLI:
// the wake goes through `codex resume <session id> PROMPT` (agent resume takes the
// same launch), in the same folder, account and CODEX_HOME, and the rollout the
// session appends to stays the record's transcript.
func TestCodexHibernateAndResume(t *testing.T) {
	t.Parallel()
	r := newClaudeRig(t)
	home := r.Codex()
	a := hibernateAndResume(t, r, "codex", false, fmt.Sprintf("[[accounts.codex]]\nlabel = \"main\"\nhome = %q\n", home))
	if a.Account != "main" {
		t.Fatalf("woken on account %q, want main", a.Account)
	}
	if !strings.HasPrefix(a.Transcript, filepath.Join(home, "sessions")) {
		t.Fatalf("woken codex: transcript %q", a.Transcript)
	}
}

// TestPiHibernateAndResume is the hibernation and wake through the real pi CLI (its
// --session, which agent resume takes too).
func TestPiHibernateAndResume(t *testing.T) {
	t.Parallel()
	r := newClaudeRig(t)
	r.Pi()
	hibernateAndResume(t, r, "pi:"+modelserver.PiModel, false)
}

// hibernateAndResume runs the scenario with provider (or provider:model) on rig r
// (not yet serving), config.toml holding config beside the GC rule, and returns the
// woken record (with all, the resumed one). What is the CLI's own runs for every
// provider: GC's hibernation stops its process, a wake through its session carries
// the earlier conversation to the model, and a session gone where only the CLI can
// tell (opencode's store) is refused. With all it also runs what is orcr's alone (the
// same for every CLI): the hibernated path is held and listed, an ended agent's
// resume is a new record on the same session linked to the old, a live agent's and a
// shell agent's resume and a gone session file are refused, and a wake whose session
// file went while it slept is refused.
func hibernateAndResume(t *testing.T, r *rig, choice string, all bool, config ...string) wire.Agent {
	writeGCConfig(r, "1s", config...)
	r.Serve()
	r.Models.Push(modelserver.Turn{Text: "Noted.", Usage: modelserver.Usage{Input: 10, Output: 2}})
	r.Must(r.runArgs("mem/a", choice, "remember the word PELICAN-42")...)
	first := r.WaitAgent("mem/a", 90*time.Second, "first turn", func(a wire.Agent) bool { return a.State == wire.StateDone && a.LastMessage == "Noted." })
	return hibernateAndWake(t, r, "mem/a", choice, first, "remember the word PELICAN-42", all)
}

// writeGCConfig writes the rig's config.toml: GC hibernates an agent idle for idle,
// and config beside it.
func writeGCConfig(r *rig, idle string, config ...string) {
	os.MkdirAll(filepath.Join(r.Dir, "config", "orcr"), 0o700)
	os.WriteFile(filepath.Join(r.Dir, "config", "orcr", "config.toml"), []byte("[gc]\nidle_after = \""+idle+"\"\nidle_action = \"hibernate\"\n"+strings.Join(config, "\n")), 0o600)
}

// hibernateAndWake is the scenario from the agent at path (first, its record after a
// turn whose user message held earlier) on: GC hibernates it once it is idle, a send
// wakes it, and so on as hibernateAndResume says.
func hibernateAndWake(t *testing.T, r *rig, path, choice string, first wire.Agent, earlier string, all bool) wire.Agent {
	provider, _, _ := strings.Cut(choice, ":")
	pid := first.PID
	// The only wait is GC's own rule (gc.idle_after): `orcr gc` sweeps until the
	// agent has been idle that long.
	var a wire.Agent
	if !wait.Until(30*time.Second, func() bool {
		r.Must("gc")
		a = r.Agent(path)
		return a.State == wire.StateHibernated
	}) {
		t.Fatalf("%s was not hibernated: %s (%s)", path, a.State, a.StateReason)
	}
	if a.PaneID != "" || a.SessionID != first.SessionID || !strings.Contains(a.StateReason, "gc.idle_after") {
		t.Fatalf("hibernated record %+v", a)
	}
	if err := processAlive(pid); err == nil {
		t.Fatalf("%s (pid %d) still runs after hibernation", provider, pid)
	}
	if all {
		if out := r.Must("agent", "ls"); !strings.Contains(out, "hibernated") {
			t.Fatalf("ls:\n%s", out)
		}
		// The path stays held.
		if res := r.Run("agent", "run", "mem/a", "--", "sh"); res.Code == 0 || !strings.Contains(res.Err, "hibernated") {
			t.Fatalf("path reuse: exit %d %s", res.Code, res.Err)
		}
	}

	r.Models.Push(modelserver.Turn{Text: "The word was PELICAN-42.", Usage: modelserver.Usage{Input: 10, Output: 4}})
	sent := time.Now()
	r.Must("agent", "send", path, "what was the word?")
	a = r.WaitAgent(path, 90*time.Second, "woken turn", func(a wire.Agent) bool {
		return a.State == wire.StateDone && a.LastMessage == "The word was PELICAN-42."
	})
	q, ok := r.conversationWith("what was the word?")
	if !ok || !strings.Contains(string(q.Body), earlier) {
		t.Fatalf("the woken request lacks the earlier conversation (found %v)", ok)
	}
	t.Logf("hibernated → send → first model request: %v", q.At.Sub(sent))
	if a.ID != first.ID || a.SessionID != first.SessionID {
		t.Fatalf("woken as another record or session: %s %s", a.ID, a.SessionID)
	}
	if !all {
		// The woken request carrying the earlier conversation is this CLI resuming its
		// session; agent resume launches through the same resume of the same session
		// (core/resume.go: a record with a SessionID goes through the provider's own
		// resume), and the new record linked to the old is orcr's, which claude proves.
		r.Must("agent", "kill", path)
		if a.Transcript == "" { // opencode: its sessions are in its SQLite store, not a file
			r.opencode("session", "delete", a.SessionID)
			if res := r.Run("agent", "resume", path); res.Code == 0 || !strings.Contains(res.Err, "session of "+path+" is gone") {
				t.Fatalf("gone opencode session: exit %d %s", res.Code, res.Err)
			}
		}
		return a
	}

	// Ended: resume makes a new record on the same session.
	r.Must("agent", "kill", "mem/a")
	r.Models.Push(modelserver.Turn{Text: "Still PELICAN-42.", Usage: modelserver.Usage{Input: 10, Output: 3}})
	out := r.Must("agent", "resume", "mem/a", "--prompt", "and once more?")
	if !strings.Contains(out, "continues") {
		t.Fatalf("resume printed %q", out)
	}
	b := r.WaitAgent("mem/a", 90*time.Second, "resumed turn", func(a wire.Agent) bool {
		return a.State == wire.StateDone && a.LastMessage == "Still PELICAN-42."
	})
	if b.ID == first.ID || b.ResumedFrom != first.ID || b.Account != first.Account || b.SessionID != first.SessionID || b.Cwd != first.Cwd {
		t.Fatalf("resumed record %s from %q session %s cwd %s account %q", b.ID, b.ResumedFrom, b.SessionID, b.Cwd, b.Account)
	}
	q, ok = r.conversationWith("and once more?")
	if !ok || !strings.Contains(string(q.Body), "what was the word?") || !strings.Contains(string(q.Body), "PELICAN-42") {
		t.Fatalf("the resumed request lacks the earlier conversation (found %v)", ok)
	}
	if res := r.Run("agent", "resume", "mem/a"); res.Code == 0 || !strings.Contains(res.Err, "not ended") {
		t.Fatalf("resume of a live agent: exit %d %s", res.Code, res.Err)
	}
	// Bad input: a shell agent.
	r.Must("agent", "run", "sh/x", "--", "sh", "-c", "exit 0")
	r.WaitAgent("sh/x", 20*time.Second, "exit", func(a wire.Agent) bool { return a.State.Terminal() })
	if res := r.Run("agent", "resume", "sh/x"); res.Code == 0 || !strings.Contains(res.Err, "keeps no session") {
		t.Fatalf("shell resume: exit %d %s", res.Code, res.Err)
	}
	// A gone session file.
	r.Must("agent", "kill", "mem/a")
	if err := os.Rename(b.Transcript, b.Transcript+".moved"); err != nil {
		t.Fatal(err)
	}
	if res := r.Run("agent", "resume", "mem/a"); res.Code == 0 || !strings.Contains(res.Err, "session file of mem/a is gone") {
		t.Fatalf("gone session: exit %d %s", res.Code, res.Err)
	}

	// A hibernated agent whose session file goes while it sleeps: the send is refused.
	os.Rename(b.Transcript+".moved", b.Transcript)
	r.Models.Push(modelserver.Turn{Text: "Back again.", Usage: modelserver.Usage{Input: 10, Output: 3}})
	r.Must("agent", "resume", "mem/a", "--prompt", "are you there?")
	c := r.WaitAgent("mem/a", 90*time.Second, "third record's turn", func(a wire.Agent) bool { return a.State == wire.StateDone && a.LastMessage == "Back again." })
	time.Sleep(1100 * time.Millisecond)
	r.Must("gc")
	r.WaitAgent("mem/a", 10*time.Second, "hibernated again", func(a wire.Agent) bool { return a.State == wire.StateHibernated })
	os.Rename(c.Transcript, c.Transcript+".moved")
	if res := r.Run("agent", "send", "mem/a", "hello?"); res.Code == 0 || !strings.Contains(res.Err, "session file of mem/a is gone") {
		t.Fatalf("wake with the session gone: exit %d %s", res.Code, res.Err)
	}
	if a := r.Agent("mem/a"); a.State != wire.StateHibernated {
		t.Fatalf("after the refused wake: %s", a.State)
	}
	os.Rename(c.Transcript+".moved", c.Transcript)
	return b
}
