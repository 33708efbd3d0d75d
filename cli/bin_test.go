package cli_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"orcr/testutil/serve"
	"orcr/testutil/testbin"
)

// binEnv runs the real orcr binary against a real server of its own (embedded pty
// host), for what only a whole program shows: a terminal's redraws, completion
// scripts run by a real shell.
type binEnv struct {
	t    *testing.T
	bin  string
	dir  string
	vars []string
}

func newBinEnv(t *testing.T) *binEnv {
	t.Helper()
	bin := testbin.Build(t, "orcr")
	dir := t.TempDir()
	var vars []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ORCR_") || k == "TMUX" || k == "XDG_CONFIG_HOME" || k == "PATH" || k == "NO_COLOR" {
			continue
		}
		vars = append(vars, kv)
	}
	vars = append(vars, "ORCR_HOME="+filepath.Join(dir, "home"), "ORCR_HOST=pty", "XDG_CONFIG_HOME="+filepath.Join(dir, "config"),
		"PATH="+filepath.Dir(bin)+":"+os.Getenv("PATH"))
	return &binEnv{t: t, bin: bin, dir: dir, vars: vars}
}

func (e *binEnv) serve() { e.t.Helper(); serve.Start(e.t, serve.Options{Bin: e.bin, Env: e.vars}) }

// run runs orcr with args and returns its stdout, failing the test on a non-zero exit.
func (e *binEnv) must(args ...string) string {
	e.t.Helper()
	cmd := exec.Command(e.bin, args...)
	cmd.Env = e.vars
	var errb strings.Builder
	cmd.Stderr = &errb
	out, err := cmd.Output()
	if err != nil {
		e.t.Fatalf("orcr %s: %v: %s", strings.Join(args, " "), err, errb.String())
	}
	return string(out)
}

// term is a real terminal: a tmux server of the test's own, one window of the given
// size running sh with the binary's environment.
type term struct {
	t    *testing.T
	sock string
}

func (e *binEnv) term(cols, rows int) *term {
	e.t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		e.t.Fatalf("tmux is required for terminal tests: %v (apt-get install tmux)", err)
	}
	tt := &term{t: e.t, sock: filepath.Join(e.dir, "term.sock")}
	cmd := exec.Command("tmux", "-S", tt.sock, "-f", "/dev/null", "new-session", "-d", "-x", strconv.Itoa(cols), "-y", strconv.Itoa(rows), "sh")
	cmd.Env = append(append([]string{}, e.vars...), "PS1=$ ")
	if out, err := cmd.CombinedOutput(); err != nil {
		e.t.Fatalf("start tmux: %v %s", err, out)
	}
	e.t.Cleanup(func() { exec.Command("tmux", "-S", tt.sock, "kill-server").Run() })
	return tt
}

func (tt *term) tmux(args ...string) string {
	tt.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-S", tt.sock}, args...)...).CombinedOutput()
	if err != nil {
		tt.t.Fatalf("tmux %s: %v %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (tt *term) keys(keys ...string) {
	tt.t.Helper()
	tt.tmux(append([]string{"send-keys", "-t", "0"}, keys...)...)
}

// screen is the window's text; colored keeps the escape sequences of its colours.
func (tt *term) screen() string  { return tt.tmux("capture-pane", "-p", "-t", "0") }
func (tt *term) colored() string { return tt.tmux("capture-pane", "-p", "-e", "-t", "0") }

// history is how many lines have scrolled off the window into tmux's scrollback.
func (tt *term) history() int {
	n, err := strconv.Atoi(strings.TrimSpace(tt.tmux("display-message", "-p", "-t", "0", "#{history_size}")))
	if err != nil {
		tt.t.Fatal(err)
	}
	return n
}
