package tmux

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"orcr/core"
)

// TestEnvExactAcrossLaunches checks that panes launched one after the other with
// different environments each get exactly their LaunchSpec.Env (plus tmux's TMUX and
// TMUX_PANE) while the session's environment holds this process's: a variable the
// spec leaves out is not inherited from the session, one it changes has its value, a
// name given twice ends with its last value.
func TestEnvExactAcrossLaunches(t *testing.T) {
	t.Setenv("OTEST_BASE", "base")
	t.Setenv("OTEST_DROP", "drop")
	t.Setenv("OTEST_CHANGE", "old")
	t.Setenv("OTEST_SPACE", "a b \"c\" $d")
	h := newTestHost(t, testSocket(t))
	defer h.Shutdown(context.Background())

	// The session's environment is this process's: what a launch need not pass.
	shown, err := h.call(ctxT(t), "show-environment -t "+session)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"OTEST_BASE=base", "OTEST_DROP=drop", `OTEST_SPACE=a b "c" $d`} {
		if !slices.Contains(shown, want) {
			t.Errorf("session environment lacks %s:\n%s", want, strings.Join(shown, "\n"))
		}
	}

	var inherited []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "OTEST_DROP=") && !strings.HasPrefix(kv, "OTEST_CHANGE=") {
			inherited = append(inherited, kv)
		}
	}
	specs := map[string][]string{
		"most":    append(slices.Clone(inherited), "OTEST_CHANGE=new", "OTEST_EXTRA=x", "TERM=xterm-256color"),
		"bare":    {"PATH=" + os.Getenv("PATH"), "LANG=C.UTF-8"},
		"twice":   append(slices.Clone(inherited), "OTEST_BASE=second", "OTEST_DROP=drop"),
		"back":    {"PATH=" + os.Getenv("PATH"), "OTEST_BASE=first", "OTEST_BASE=base", "SHELL=/bin/sh"},
		"program": append(slices.Clone(inherited), "OTEST_DROP=kept"),
	}
	dir := t.TempDir()
	for name, env := range specs {
		out := filepath.Join(dir, name)
		_, err := h.Launch(ctxT(t), core.LaunchSpec{Name: "env/" + name, Env: env, Cwd: dir,
			Argv: []string{"sh", "-c", `env -0 > "$0.tmp" && mv "$0.tmp" "$0"; exec sleep 600`, out}})
		if err != nil {
			t.Fatalf("launch %s: %v", name, err)
		}
	}
	for name, env := range specs {
		out := filepath.Join(dir, name)
		var data []byte
		waitFor(t, "the environment of "+name, func() bool {
			data, err = os.ReadFile(out)
			return err == nil
		})
		got := map[string]string{}
		for _, kv := range strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00") {
			k, v, _ := strings.Cut(kv, "=")
			got[k] = v
		}
		want := map[string]string{}
		for _, kv := range env {
			k, v, _ := strings.Cut(kv, "=")
			want[k] = v // the last of a name wins
		}
		// tmux's own, and sh's PWD (it sets it to the directory it runs in).
		for _, k := range []string{"TMUX", "TMUX_PANE", "PWD"} {
			delete(got, k)
			delete(want, k)
		}
		if _, ok := want["TERM"]; !ok && got["TERM"] != "" {
			delete(got, "TERM") // tmux's default-terminal, for a spec without one
		}
		for k, v := range want {
			if g, ok := got[k]; !ok || g != v {
				t.Errorf("%s: %s=%q in the pane, want %q (present %v)", name, k, g, v, ok)
			}
		}
		for k, v := range got {
			if _, ok := want[k]; !ok {
				t.Errorf("%s: %s=%q in the pane, not in its LaunchSpec.Env", name, k, v)
			}
		}
	}
}

// TestEnvDiff checks what a launch passes beside the session's environment: only the
// variables that differ, the ones tmux sets itself, every one of a name given twice,
// and the session's names the spec lacks to unset.
func TestEnvDiff(t *testing.T) {
	base := map[string]string{"A": "1", "B": "2", "C": "3", "D": "4"}
	add, unset := envDiff(base, []string{"A=1", "B=9", "TERM=xterm", "E=5", "D=4", "D=6", "=x", "junk", "SHELL=/bin/zsh"})
	if want := []string{"B=9", "TERM=xterm", "E=5", "D=4", "D=6"}; !slices.Equal(add, want) {
		t.Errorf("add = %q, want %q", add, want)
	}
	if want := []string{"C"}; !slices.Equal(unset, want) {
		t.Errorf("unset = %q, want %q", unset, want)
	}
	// A program named NAME=VALUE is not taken by env(1) for a variable.
	argv := launchArgv(core.LaunchSpec{Argv: []string{"a=b", "x"}, Env: []string{"SHELL=/bin/sh", "TERM_PROGRAM=t", "TERM_PROGRAM_VERSION=1"}}, []string{"C"})
	if want := []string{envBin, "-u", "C", "--", "SHELL=/bin/sh", "/bin/sh", "-c", `exec "$0" "$@"`, "a=b", "x"}; !slices.Equal(argv, want) {
		t.Errorf("argv = %q, want %q", argv, want)
	}
}

// TestSessionEnvLines checks the commands that bring a session's environment left by
// an earlier server (show-environment's lines) to this one's: a name it lacks set, a
// changed value set again, a name this one lacks unset, a removed name (-NAME) left.
func TestSessionEnvLines(t *testing.T) {
	got := sessionEnvLines([]string{"A=1", "B=2", "-C", "E=x=y"}, map[string]string{"A": "1", "B": "3", "D": "a b"})
	want := []string{
		"set-environment -t orcr -u \"E\"",
		"set-environment -t orcr \"B\" \"3\"",
		"set-environment -t orcr \"D\" \"a b\"",
	}
	if !slices.Equal(got, want) {
		t.Errorf("lines = %q, want %q", got, want)
	}
}

// TestSessionEnvFollowsTheServer: a host that connects to a tmux server an earlier
// host configured gives the session its own environment, not the earlier one's.
func TestSessionEnvFollowsTheServer(t *testing.T) {
	sock := testSocket(t)
	t.Setenv("OTEST_OLD", "old")
	t.Setenv("OTEST_KEPT", "1")
	h := newTestHost(t, sock)
	if err := h.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	os.Unsetenv("OTEST_OLD")
	t.Setenv("OTEST_KEPT", "2")
	h = newTestHost(t, sock)
	defer h.Shutdown(context.Background())
	shown, err := h.call(ctxT(t), "show-environment -t "+session)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(shown, "OTEST_OLD=old") || !slices.Contains(shown, "OTEST_KEPT=2") {
		t.Errorf("session environment after the second host:\n%s", strings.Join(shown, "\n"))
	}
}
