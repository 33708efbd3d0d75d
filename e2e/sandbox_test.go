package e2e

import (
	"fmt"
	"net"
	"orcr/testutil/clis"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/sandbox/confine"
	"orcr/testutil/wait"
)

// sandboxEnv is a server whose HOME is a fake one holding ~/.ssh, with a work folder
// for the agents and a folder outside everything they are given.
type sandboxEnv struct {
	*env
	user, work, outside string
}

func newSandboxEnv(t *testing.T, extra ...string) *sandboxEnv {
	t.Helper()
	if _, err := confine.KernelABI(); err != nil {
		clis.Missingf(t, "no Landlock on this kernel: %v", err)
	}
	dir := settledTempDir(t)
	s := &sandboxEnv{user: filepath.Join(dir, "user"), work: filepath.Join(dir, "work"), outside: filepath.Join(dir, "outside")}
	for _, d := range []string{filepath.Join(s.user, ".ssh"), s.work, s.outside} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(s.user, ".ssh", "id_ed25519"), []byte("PRIVATE KEY"), 0o600)
	s.env = newEnv(t, append([]string{"HOME=" + s.user}, extra...)...)
	return s
}

// listenTCP accepts and closes connections on a fresh local port until the test ends.
func listenTCP(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	return l.Addr().(*net.TCPAddr).Port
}

// probeScript tries what a confined agent must and must not do, one line each.
func probeScript(outside, user string, given, other int) string {
	return fmt.Sprintf(`
try() { if eval "$2" 2>/dev/null; then echo "$1: yes"; else echo "$1: no"; fi; }
try write-cwd 'echo hi > inside.txt'
try write-outside 'echo x > %[1]s/outside.txt'
try read-ssh 'cat %[2]s/.ssh/id_ed25519 >/dev/null'
try list-home 'ls %[2]s >/dev/null'
try connect-given 'bash -c "exec 3<>/dev/tcp/127.0.0.1/%[3]d"'
try connect-other 'bash -c "exec 3<>/dev/tcp/127.0.0.1/%[4]d"'
try server-environ 'cat /proc/$PPID/environ >/dev/null'
try orcr-socket '"$ORCR_BIN" agent get "$ORCR_ID" >/dev/null'
cat %[2]s/.ssh/id_ed25519
echo probes-done
exec cat
`, outside, user, given, other)
}

func probeAnswers(screen string) map[string]string {
	got := map[string]string{}
	for _, l := range strings.Split(screen, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(l), ": ")
		if ok && (v == "yes" || v == "no") {
			got[k] = v
		}
	}
	return got
}

// TestSandboxedShellAgent: a shell agent spawned with --sandbox writes its folder and
// nothing else, cannot read ~/.ssh nor list $HOME, connects only to the port it was
// given, cannot read the server's environment, and still reaches orcr's socket;
// agent get --explain shows the policy and the refusal its screen showed. The same
// script with --sandbox=off does everything.
func TestSandboxedShellAgent(t *testing.T) {
	s := newSandboxEnv(t)
	s.serve()
	given, other := listenTCP(t), listenTCP(t)
	script := probeScript(s.outside, s.user, given, other)

	s.must("agent", "run", "box/in", "--sandbox", "--sandbox-port", fmt.Sprint(given), "--cwd", s.work, "--", "sh", "-c", script)
	var screen string
	wait.For(t, 20*time.Second, "the confined probes", func() bool {
		screen = s.orcr("agent", "read", "box/in", "--lines", "60").Out
		return strings.Contains(screen, "probes-done")
	})
	want := map[string]string{"write-cwd": "yes", "write-outside": "no", "read-ssh": "no", "list-home": "no",
		"connect-given": "yes", "connect-other": "no", "server-environ": "no", "orcr-socket": "yes"}
	got := probeAnswers(screen)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("confined %s: %q, want %q", k, got[k], v)
		}
	}
	if _, err := os.Stat(filepath.Join(s.outside, "outside.txt")); err == nil {
		t.Error("the confined agent wrote outside its folder")
	}
	if b, _ := os.ReadFile(filepath.Join(s.work, "inside.txt")); string(b) != "hi\n" {
		t.Errorf("inside.txt = %q", b)
	}
	ex := s.must("agent", "get", "box/in", "--explain")
	for _, w := range []string{"sandbox:", "on: Landlock ABI", "rw", s.work, fmt.Sprintf("TCP 443,%d", given), "refused",
		"Permission denied (on its screen)"} {
		if !strings.Contains(ex, w) {
			t.Errorf("--explain lacks %q:\n%s", w, ex)
		}
	}
	if t.Failed() {
		t.Fatalf("screen:\n%s", screen)
	}

	s.must("agent", "run", "box/out", "--sandbox=off", "--cwd", s.work, "--", "sh", "-c", script)
	wait.For(t, 20*time.Second, "the unconfined probes", func() bool {
		screen = s.orcr("agent", "read", "box/out", "--lines", "60").Out
		return strings.Contains(screen, "probes-done")
	})
	got = probeAnswers(screen)
	for _, k := range []string{"write-outside", "read-ssh", "connect-other", "server-environ"} {
		if got[k] != "yes" {
			t.Errorf("unconfined %s: %q, want yes\n%s", k, got[k], screen)
		}
	}
	if ex := s.must("agent", "get", "box/out", "--explain"); !strings.Contains(ex, "off") {
		t.Errorf("--explain of the unconfined agent:\n%s", ex)
	}
}

// TestPaneCredentials: a pane gets no GitHub token (from the server's environment or
// --env) and no other provider's key; a {{secret.NAME}} is resolved at launch from a
// 0600 secrets.toml and never shown by agent get; a world-readable secrets.toml is
// refused with the fix.
func TestPaneCredentials(t *testing.T) {
	e := newEnv(t, "GH_TOKEN=gh-secret-1", "GITHUB_TOKEN=gh-secret-2", "OPENAI_API_KEY=sk-openai", "ANTHROPIC_API_KEY=sk-ant", "KEEP_ME=1")
	e.serve()
	cfg := filepath.Join(lastEnv(e.vars, "XDG_CONFIG_HOME"), "orcr")
	os.MkdirAll(cfg, 0o700)
	secrets := filepath.Join(cfg, "secrets.toml")
	if err := os.WriteFile(secrets, []byte("DB_PASSWORD = \"hunter2\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.must("agent", "run", "creds", "--env", "GH_TOKEN=gh-secret-3", "--env", "DB={{secret.DB_PASSWORD}}", "--",
		"sh", "-c", `echo "gh=${GH_TOKEN:-none} ghub=${GITHUB_TOKEN:-none} openai=${OPENAI_API_KEY:-none} ant=${ANTHROPIC_API_KEY:-none} keep=$KEEP_ME db=$DB"; exec cat`)
	var screen string
	wait.For(t, 15*time.Second, "the env line", func() bool {
		screen = e.orcr("agent", "read", "creds").Out
		return strings.Contains(screen, "keep=")
	})
	if !strings.Contains(screen, "gh=none ghub=none openai=none ant=none keep=1 db=hunter2") {
		t.Fatalf("the pane's credentials:\n%s", screen)
	}
	if got := e.must("agent", "get", "creds", "--json"); strings.Contains(got, "hunter2") || strings.Contains(got, "gh-secret") {
		t.Fatalf("agent get shows a secret:\n%s", got)
	}
	os.Chmod(secrets, 0o644)
	r := e.orcr("agent", "run", "creds2", "--env", "DB={{secret.DB_PASSWORD}}", "--", "sh", "-c", "exec cat")
	if r.Code == 0 || !strings.Contains(r.Err, "chmod 600") {
		t.Fatalf("a world-readable secrets.toml was read: exit %d\n%s%s", r.Code, r.Out, r.Err)
	}
}

func lastEnv(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// TestSandboxRefusesGrantHoldingOrcrHome: `orcr agent run x --sandbox --cwd ~` where
// orcr's home is under ~ is refused before anything starts, with a message that names
// orcr's home; so is a --sandbox-rw that holds orcr's config folder (secrets.toml).
// Nothing is recorded. The same cwd unconfined, and a confined agent in its own
// folder, start.
func TestSandboxRefusesGrantHoldingOrcrHome(t *testing.T) {
	s := newSandboxEnv(t)
	user := filepath.Dir(s.home) // holds orcr's home and its config folder
	s.vars = append(s.vars, "HOME="+user)
	s.serve()
	r := s.orcr("agent", "run", "box/home", "--sandbox", "--cwd", user, "--", "sh", "-c", "exec cat")
	if r.Code == 0 || !strings.Contains(r.Err, "orcr's home") || !strings.Contains(r.Err, s.home) {
		t.Fatalf("--cwd ~ holding orcr's home: exit %d\n%s%s", r.Code, r.Out, r.Err)
	}
	r = s.orcr("agent", "run", "box/cfg", "--sandbox", "--cwd", s.work, "--sandbox-rw", filepath.Join(user, "config"), "--", "sh", "-c", "exec cat")
	if r.Code == 0 || !strings.Contains(r.Err, "orcr's config folder") {
		t.Fatalf("--sandbox-rw holding orcr's config: exit %d\n%s%s", r.Code, r.Out, r.Err)
	}
	for _, p := range []string{"box/home", "box/cfg"} {
		if g := s.orcr("agent", "get", p); g.Code == 0 {
			t.Fatalf("%s was recorded:\n%s", p, g.Out)
		}
	}
	s.must("agent", "run", "box/off", "--sandbox=off", "--cwd", user, "--", "sh", "-c", "exec cat")
	s.must("agent", "run", "box/ok", "--sandbox", "--cwd", s.work, "--", "sh", "-c", "echo started; exec cat")
	wait.For(t, 20*time.Second, "the confined agent's line", func() bool {
		return strings.Contains(s.orcr("agent", "read", "box/ok").Out, "started")
	})
}
