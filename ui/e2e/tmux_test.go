// Package e2e drives the real orcr dashboard end to end: the real binary in a pane of a
// private tmux server, typed at with send-keys and read with capture-pane, against a
// real in-process engine with real PTYs. Every wait polls for a condition with a
// deadline; nothing sleeps and hopes.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"orcr/testutil/clis"
	"orcr/testutil/proc"
	"orcr/testutil/wait"

	"orcr/testutil/testbin"
)

// rig is one isolated orcr installation plus a private tmux server to show it in.
type rig struct {
	t    testing.TB
	bin  string
	fake string
	dir  string
	home string
	sock string
	env  []string
	pids []int // dashboard processes started, for cleanup
}

func newRig(t *testing.T) *rig { return newRigTB(t) }

func newRigTB(t testing.TB) *rig {
	t.Helper()
	clis.Program(t, "tmux", "apt-get install tmux")
	r := &rig{t: t, bin: testbin.Build(t, "orcr"), fake: testbin.Build(t, "orcr/testutil/fakeagent")}
	// tmux socket paths must stay short (sun_path is ~108 bytes).
	dir, err := os.MkdirTemp("", "orcr-ui-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	r.dir = dir
	r.home = filepath.Join(dir, "home")
	r.sock = filepath.Join(dir, "t.sock")
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "ORCR_") || k == "TMUX" || k == "XDG_CONFIG_HOME" || k == "TERM" || k == "HOME" {
			continue
		}
		r.env = append(r.env, kv)
	}
	// A home of its own: the agents' shells (claude snapshots a login shell) must not
	// run this machine's rc files, whose background jobs (pyenv's rehash waiting on
	// its lock) carry the test's environment and outlive it.
	user := filepath.Join(dir, "user")
	if err := os.MkdirAll(user, 0o700); err != nil {
		t.Fatal(err)
	}
	r.env = append(r.env, "HOME="+user, "ORCR_HOME="+r.home, "ORCR_HOST=pty", "XDG_CONFIG_HOME="+filepath.Join(dir, "config"))
	t.Cleanup(func() {
		// Closing the tmux server hangs up the dashboard; it must exit on its own
		// (and stop its embedded agents) before the home is removed under it.
		_ = exec.Command("tmux", "-S", r.sock, "kill-server").Run()
		for _, pid := range r.pids {
			if !wait.Until(15*time.Second, func() bool { return proc.Gone(pid) }) {
				t.Errorf("dashboard %d did not exit after its terminal hung up; killing it", pid)
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		// The embedded host's agents go with the dashboard; wait until no process
		// carries this home in its environment (ORCR_HOME, ORCR_SOCKET).
		var left []int
		if !wait.Until(15*time.Second, func() bool { left = processesUsing(r.home); return len(left) == 0 }) {
			t.Errorf("processes outlived the dashboard: %v; killing them", left)
			for _, pid := range left {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		os.RemoveAll(dir)
	})
	return r
}

// tmux runs a tmux command on the private server.
func (r *rig) tmux(args ...string) string {
	r.t.Helper()
	cmd := exec.Command("tmux", append([]string{"-S", r.sock}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// start opens the dashboard in a 160×48 pane. The pane stays after orcr exits
// (remain-on-exit) so a test can read what it left and restart it in place.
//
// The pane's shell outlives the dashboard until tmux has drawn all it printed: tmux
// before 3.7 throws away what it has not yet read from a pane's pty when it reaps the
// pane's process first, so a farewell printed right before the exit was sometimes
// missing under load. The shell sets the pane's title once the dashboard has exited and
// waits until tmux shows that title: tmux reads a pty in order, so everything printed
// before it is on the screen by then.
func (r *rig) start() {
	r.t.Helper()
	cmdline := "env " + shellQuote(r.env...) + " TERM=xterm-256color " + shellQuote(r.bin) + "; s=$?; " +
		`printf '\033]2;` + rigExited + `\033\\'; ` +
		`until [ "$(tmux display-message -p -t "$TMUX_PANE" '#{pane_title}')" = ` + rigExited + ` ]; do sleep 0.05; done; exit $s`
	if _, err := os.Stat(r.sock); err != nil {
		r.tmux("new-session", "-d", "-s", "ui", "-x", "160", "-y", "48", cmdline)
		r.tmux("set-option", "-t", "ui", "remain-on-exit", "on")
	} else {
		r.tmux("respawn-pane", "-k", "-t", "ui", cmdline)
	}
	if pid := r.dashboardPID(); pid > 0 {
		r.pids = append(r.pids, pid)
	}
}

// rigExited is the pane title the shell around the dashboard sets once it has exited.
const rigExited = "orcr-rig-dashboard-exited"

// dashboardPID is the pid of the dashboard the pane's shell started (0 if none shows
// up): the shell's child.
func (r *rig) dashboardPID() int {
	r.t.Helper()
	shell := r.panePID()
	var pid int
	wait.Until(10*time.Second, func() bool {
		b, err := os.ReadFile("/proc/" + shell + "/task/" + shell + "/children")
		if f := strings.Fields(string(b)); err == nil && len(f) > 0 {
			pid, _ = strconv.Atoi(f[0])
		}
		return pid > 0
	})
	return pid
}

// screen is the pane's current text.
func (r *rig) screen() string {
	r.t.Helper()
	return r.tmux("capture-pane", "-p", "-t", "ui")
}

// waitScreen polls the pane until cond holds, failing with the last screen at the deadline.
func (r *rig) waitScreen(what string, d time.Duration, cond func(string) bool) string {
	r.t.Helper()
	var s string
	if !wait.Until(d, func() bool { s = r.screen(); return cond(s) }) {
		r.t.Fatalf("timed out waiting for %s; screen:\n%s", what, s)
	}
	return s
}

// pollScreen is waitScreen that reports a timeout instead of failing, for steps a test
// retries.
func (r *rig) pollScreen(d time.Duration, cond func(string) bool) bool {
	r.t.Helper()
	return wait.Until(d, func() bool { return cond(r.screen()) })
}

func (r *rig) waitText(d time.Duration, texts ...string) string {
	r.t.Helper()
	return r.waitScreen(fmt.Sprintf("%q", texts), d, func(s string) bool {
		for _, t := range texts {
			if !strings.Contains(s, t) {
				return false
			}
		}
		return true
	})
}

func (r *rig) keys(keys ...string) {
	r.t.Helper()
	r.tmux(append([]string{"send-keys", "-t", "ui"}, keys...)...)
}

// typeText sends literal text.
func (r *rig) typeText(s string) {
	r.t.Helper()
	r.tmux("send-keys", "-t", "ui", "-l", s)
}

// orcr runs the CLI against the same home.
func (r *rig) orcr(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait.Scale(30*time.Second))
	defer cancel()
	cmd := exec.CommandContext(ctx, r.bin, args...)
	cmd.Env = r.env
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (r *rig) mustOrcr(args ...string) string {
	r.t.Helper()
	out, err := r.orcr(args...)
	if err != nil {
		r.t.Fatalf("orcr %v: %v\n%s", args, err, out)
	}
	return out
}

// paneDead reports whether the dashboard process in the pane has exited.
func (r *rig) paneDead() bool {
	return strings.TrimSpace(r.tmux("display-message", "-p", "-t", "ui", "#{pane_dead}")) == "1"
}

func (r *rig) panePID() string {
	return strings.TrimSpace(r.tmux("display-message", "-p", "-t", "ui", "#{pane_pid}"))
}

func shellQuote(args ...string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}

// treeLine returns the tree pane's row for an agent name, or "".
func treeLine(screen, name string) string {
	for _, l := range strings.Split(screen, "\n") {
		if rs := []rune(l); len(rs) > treeWidth {
			l = string(rs[:treeWidth])
		}
		f := strings.Fields(l)
		for j, w := range f {
			if w == name && j > 0 {
				return l
			}
		}
	}
	return ""
}

// treeWidth is the tree pane's width in a 160-column terminal (45 %).
const treeWidth = 72

// processesUsing lists the processes whose environment mentions home.
func processesUsing(home string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && bytes.Contains(env, []byte(home)) {
			out = append(out, pid)
		}
	}
	return out
}
