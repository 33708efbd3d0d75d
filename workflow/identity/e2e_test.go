package identity_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/modelserver"
	orcrrig "orcr/testutil/rig"
	"orcr/testutil/wait"
)

// rig is an orcr installation (a real `orcr serve`, the embedded pty host) with its
// identities directory and a memory root of its own.
type rig struct {
	*orcrrig.Rig
	ids  string // $XDG_CONFIG_HOME/orcr/identities
	data string // $XDG_DATA_HOME
}

func newRig(t *testing.T) *rig {
	t.Helper()
	r := &rig{Rig: orcrrig.New(t)}
	r.OnlyAdded()
	r.ids = filepath.Join(r.Config, "orcr", "identities")
	r.data = filepath.Join(r.Dir, "data")
	r.Vars = append(r.Vars, "XDG_DATA_HOME="+r.data)
	return r
}

// identity writes identity name with description and, when agents is not "", AGENTS.md.
func (r *rig) identity(name, description, agents string) string {
	r.T.Helper()
	dir := filepath.Join(r.ids, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		r.T.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "identity.toml"), []byte("description = "+quote(description)+"\n"), 0o600); err != nil {
		r.T.Fatal(err)
	}
	if agents != "" {
		if err := os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte(agents), 0o600); err != nil {
			r.T.Fatal(err)
		}
	}
	return dir
}

func quote(s string) string { b, _ := json.Marshal(s); return string(b) }

func (r *rig) memory(name string) string {
	return filepath.Join(r.data, "orcr", "identities", name, "memory")
}

// systemOf is the system prompt of a claude request, as text.
func systemOf(t *testing.T, q modelserver.Request) string {
	t.Helper()
	var body struct {
		System json.RawMessage `json:"system"`
	}
	if err := q.JSON(&body); err != nil {
		t.Fatal(err)
	}
	var s string
	if json.Unmarshal(body.System, &s) == nil {
		return s
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	json.Unmarshal(body.System, &blocks)
	var b strings.Builder
	for _, x := range blocks {
		b.WriteString(x.Text + "\n")
	}
	return b.String()
}

// TestIdentityReachesClaude runs the real claude CLI as an identity: its AGENTS.md and
// its memory directory's path arrive in the system prompt of the model request, the
// prompt after --add-dir still arrives as the user's turn, and a scripted Write into
// the memory directory lands there (the directory is given read-write).
func TestIdentityReachesClaude(t *testing.T) {
	r := newRig(t)
	r.Claude()
	r.identity("maintainer", "Keeps the auth package healthy.", "IDENTITY-MARKER-5: run the tests before you say done.\n")
	r.Serve()
	mem := r.memory("maintainer")
	note := filepath.Join(mem, "notes.md")
	u := modelserver.Usage{Input: 10, Output: 5}
	r.Models.Push(modelserver.Turn{ToolCalls: []modelserver.ToolCall{{Name: "Write", Input: map[string]any{
		"file_path": note, "content": "MEMORY-NOTE-3: the login test is flaky\n"}}}, Usage: u},
		modelserver.Turn{Text: "Noted in memory.", Usage: u})

	r.Must("agent", "run", "auth/fix", "--provider", "claude", "--identity", "maintainer", "--prompt", "Remember the flaky test.",
		"--cwd", r.Work, "--", "--permission-mode", "acceptEdits")
	a := r.WaitAgent("auth/fix", 90*time.Second, "the turn after the Write", func(a wire.Agent) bool {
		return a.LastMessage == "Noted in memory."
	})
	q, ok := r.RequestWith("IDENTITY-MARKER-5")
	if !ok {
		t.Fatalf("no model request carried the identity's AGENTS.md (%d requests)", len(r.Models.Requests()))
	}
	sys := systemOf(t, q)
	for _, want := range []string{"IDENTITY-MARKER-5: run the tests before you say done.", "Your memory directory is " + mem,
		`You act as the identity "maintainer": Keeps the auth package healthy.`} {
		if !strings.Contains(sys, want) {
			t.Fatalf("the system prompt lacks %q:\n%.3000s", want, sys)
		}
	}
	if got := q.LastUser(); !strings.Contains(got, "Remember the flaky test.") {
		t.Fatalf("the prompt did not arrive as the user's turn (after --add-dir): %q", got)
	}
	b, err := os.ReadFile(note)
	if err != nil || !strings.Contains(string(b), "MEMORY-NOTE-3") {
		t.Fatalf("the Write into the memory directory: %q %v", b, err)
	}
	if a.Identity != "maintainer" || a.Env["ORCR_MEMORY"] == "" || !strings.Contains(strings.Join(a.Argv, " "), "--add-dir="+mem) {
		t.Fatalf("record: identity %q env %v argv %q", a.Identity, a.Env, a.Argv)
	}
	if out := r.Must("agent", "get", "auth/fix"); !strings.Contains(out, "maintainer") {
		t.Fatalf("agent get does not show the identity:\n%s", out)
	}
}

// TestIdentityRefusals: an unknown identity, an identity.toml with an unknown key and
// an AGENTS.md that is a symlink out of the identity's directory (to /etc/shadow) are
// refused before anything starts; a symlink inside the directory is followed.
func TestIdentityRefusals(t *testing.T) {
	r := newRig(t)
	dir := r.identity("leaky", "Reads what it should not.", "")
	if err := os.Symlink("/etc/shadow", filepath.Join(dir, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	bad := r.identity("typo", "x", "")
	os.WriteFile(filepath.Join(bad, "identity.toml"), []byte("description = \"x\"\ncolour = \"red\"\n"), 0o600)
	inside := r.identity("linked", "Its AGENTS.md is a link to a file beside it.", "")
	os.WriteFile(filepath.Join(inside, "standing.md"), []byte("LINKED-MARKER\n"), 0o600)
	os.Symlink("standing.md", filepath.Join(inside, "AGENTS.md"))
	r.identity("big", "Says a lot.", strings.Repeat("A standing instruction, one of many.\n", 6000))
	r.Serve()

	for _, c := range []struct{ name, want string }{
		{"nobody", `no identity "nobody"`},
		{"leaky", "AGENTS.md is a symlink to /etc/shadow, outside the identity's directory"},
		{"typo", "identity.toml:2"},
		{"Bad/Name", "invalid identity name"},
	} {
		res := r.Run("agent", "run", "x/"+strings.ToLower(strings.ReplaceAll(c.name, "/", "-")), "--identity", c.name, "--", "sleep", "60")
		if res.Code == 0 || !strings.Contains(res.Err, c.want) {
			t.Errorf("--identity %s: exit %d, stderr %q; want an error with %q", c.name, res.Code, res.Err, c.want)
		}
	}
	if out := r.Must("agent", "ls", "--all"); strings.Contains(out, "x/") {
		t.Fatalf("a refused spawn left a record:\n%s", out)
	}
	// Over the cap: cut, with a warning the CLI prints; the spawn goes ahead.
	res := r.Run("agent", "run", "x/big", "--identity", "big", "--", "sleep", "60")
	if res.Code != 0 || !strings.Contains(res.Err, "orcr: warning: identity big: AGENTS.md is 222000 bytes; only its first") {
		t.Fatalf("big AGENTS.md: exit %d, stderr %q", res.Code, res.Err)
	}
	if a := r.Agent("x/big"); len(a.SystemPrompt) > 120<<10 || !strings.Contains(strings.Join(a.RoleNotes, "\n"), "AGENTS.md is 222000 bytes") {
		t.Fatalf("big: system prompt %d bytes, notes %q", len(a.SystemPrompt), a.RoleNotes)
	}
	r.Must("agent", "run", "x/linked", "--identity", "linked", "--", "sleep", "60")
	if a := r.Agent("x/linked"); a.Identity != "linked" || !strings.Contains(a.SystemPrompt, "LINKED-MARKER") {
		t.Fatalf("linked: identity %q system prompt %q", a.Identity, a.SystemPrompt)
	}
}

// TestIdentityInheritedInPane: an agent spawned from an identity's pane acts as the
// same identity (its record, its environment) and cannot choose another: asking is
// refused with the reason, also for an identity that exists.
func TestIdentityInheritedInPane(t *testing.T) {
	r := newRig(t)
	r.identity("maintainer", "Keeps things.", "Be careful.\n")
	r.identity("intruder", "Someone else.", "")
	r.Serve()
	script := filepath.Join(r.Work, "parent.sh")
	os.WriteFile(script, []byte(`"$ORCR_BIN" agent run kid -- sh -c 'echo "kid is $ORCR_IDENTITY at $ORCR_MEMORY"; exec sleep 300'
"$ORCR_BIN" agent run other --identity intruder -- sleep 300 2> other.err
echo "other exit $?" >> other.err
"$ORCR_BIN" agent run same --identity maintainer -- sleep 300 2> same.err
echo parent-finished
exec sleep 300
`), 0o600)
	r.Must("agent", "run", "boss", "--identity", "maintainer", "--cwd", r.Work, "--", "sh", script)
	if !wait.Until(60*time.Second, func() bool { return strings.Contains(r.Run("agent", "read", "boss").Out, "parent-finished") }) {
		t.Fatalf("the parent's script did not finish:\n%s", r.Run("agent", "read", "boss").Out)
	}
	kid := r.WaitAgent("boss/kid", 30*time.Second, "kid running", func(a wire.Agent) bool { return a.State == wire.StateWorking || a.State == wire.StateIdle })
	if kid.Identity != "maintainer" || kid.ParentPath != "boss" || !strings.Contains(kid.SystemPrompt, "Be careful.") {
		t.Fatalf("kid: identity %q parent %q system prompt %q", kid.Identity, kid.ParentPath, kid.SystemPrompt)
	}
	if !wait.Until(30*time.Second, func() bool {
		return strings.Contains(r.Run("agent", "read", "boss/kid").Out, "kid is maintainer at "+r.memory("maintainer"))
	}) {
		t.Fatalf("kid's environment:\n%s", r.Run("agent", "read", "boss/kid").Out)
	}
	b, _ := os.ReadFile(filepath.Join(r.Work, "other.err"))
	if !strings.Contains(string(b), "spawn refused: boss acts as identity maintainer") || !strings.Contains(string(b), "other exit 1") {
		t.Fatalf("choosing another identity from the pane: %s", b)
	}
	if res := r.Run("agent", "get", "boss/other"); res.Code == 0 {
		t.Fatalf("a refused child has a record:\n%s", res.Out)
	}
	if same := r.Agent("boss/same"); same.Identity != "maintainer" {
		t.Fatalf("naming its own identity: %q", same.Identity)
	}
}

// TestIdentityReachesCodex runs the real codex CLI as an identity: the AGENTS.md and
// memory path arrive in its request (codex's developer message), and codex starts
// with the memory given by its own --add-dir.
func TestIdentityReachesCodex(t *testing.T) {
	r := newRig(t)
	r.Codex()
	r.identity("maintainer", "Keeps the auth package healthy.", "IDENTITY-MARKER-6: run the tests before you say done.\n")
	r.Serve()
	r.Models.Push(modelserver.Turn{Text: "Understood.", Usage: modelserver.Usage{Input: 10, Output: 5}})
	r.Must("agent", "run", "auth/codex", "--provider", "codex", "--identity", "maintainer", "--prompt", "Say hello.", "--cwd", r.Work)
	a := r.WaitAgent("auth/codex", 90*time.Second, "codex's turn", func(a wire.Agent) bool { return a.LastMessage == "Understood." })
	mem := r.memory("maintainer")
	if _, ok := r.RequestWith("IDENTITY-MARKER-6", "Your memory directory is "+mem); !ok {
		t.Fatalf("no model request carried the identity's AGENTS.md and memory (%d requests)", len(r.Models.Requests()))
	}
	if !strings.Contains(strings.Join(a.Argv, " "), "--add-dir "+mem) {
		t.Fatalf("argv %q", a.Argv)
	}
}
