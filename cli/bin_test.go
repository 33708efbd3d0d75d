package cli_test

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	testrig "orcr/testutil/rig"
)

// binEnv is the real orcr binary against a real server of its own (testutil/rig: the
// embedded pty host, its own home and config), for what only a whole program shows:
// a terminal's redraws, completion scripts run by a real shell.
type binEnv struct{ *testrig.Rig }

func newBinEnv(t *testing.T) *binEnv { return &binEnv{testrig.New(t)} }

func (e *binEnv) serve() { e.T.Helper(); e.Serve() }

// must runs orcr with args and returns its stdout, failing the test on a non-zero exit.
func (e *binEnv) must(args ...string) string { e.T.Helper(); return e.Must(args...) }

// term is a real terminal: a tmux server of the test's own, one window of the given
// size running sh with the binary's environment.
type term struct {
	t    testing.TB
	sock string
}

func (e *binEnv) term(cols, rows int) *term {
	e.T.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		e.T.Fatalf("tmux is required for terminal tests: %v (apt-get install tmux)", err)
	}
	tt := &term{t: e.T, sock: filepath.Join(e.Dir, "term.sock")}
	cmd := exec.Command("tmux", "-S", tt.sock, "-f", "/dev/null", "new-session", "-d", "-x", strconv.Itoa(cols), "-y", strconv.Itoa(rows), "sh")
	cmd.Env = append(append([]string{}, e.Vars...), "PS1=$ ")
	if out, err := cmd.CombinedOutput(); err != nil {
		e.T.Fatalf("start tmux: %v %s", err, out)
	}
	e.T.Cleanup(func() { exec.Command("tmux", "-S", tt.sock, "kill-server").Run() })
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
