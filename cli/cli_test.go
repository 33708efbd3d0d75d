package cli_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"orcr/adapters/hook"
	"orcr/adapters/shell"
	"orcr/cli"
	"orcr/core"
	"orcr/core/socket"
	"orcr/core/wire"
	"orcr/orchestrate"
	"orcr/pty"
	"orcr/schedule"
	"orcr/store"
	"orcr/testutil/wait"
)

// rig runs the command tree against an in-process engine (a real badger store and the
// embedded pty host), counting how often a command connects.
type rig struct {
	eng   *core.Engine
	st    *store.Store
	svc   wire.Transport
	dials atomic.Int32
}

func newRig(t *testing.T, seed ...wire.Agent) *rig {
	t.Helper()
	home := t.TempDir()
	st, err := store.Open(home+"/store", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Seeded records are what an earlier server left in the store: ended agents of
	// any provider, with their usage, loaded by the engine as on a restart.
	for _, a := range seed {
		if err := st.PutAgent(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	eng, err := core.NewEngine(core.Options{Store: st, Host: pty.New(pty.Options{}), Providers: []core.Provider{shell.New()},
		Home: home, Socket: home + "/orcr.sock"})
	if err != nil {
		t.Fatal(err)
	}
	sched, err := schedule.New(schedule.Options{Home: home, Socket: home + "/orcr.sock"})
	if err != nil {
		t.Fatal(err)
	}
	plans, err := orchestrate.NewService(orchestrate.ServiceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		plans.Close()
		sched.Close()
		eng.Close(ctx)
		st.Close()
	})
	if err := eng.Start(context.Background(), sched, plans); err != nil {
		t.Fatal(err)
	}
	ip, err := socket.NewInProcess(core.KernelMethods(eng), sched.Methods(), plans.Methods())
	if err != nil {
		t.Fatal(err)
	}
	return &rig{eng: eng, st: st, svc: ip}
}

// run runs one invocation of orcr with args and returns its exit code and output.
func (r *rig) run(t *testing.T, stdin string, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), append([]string{"orcr"}, args...), cli.Options{
		Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb,
		Connect: func(context.Context) (wire.Transport, error) {
			r.dials.Add(1)
			return r.svc, nil
		},
		Daemon: cli.Daemon{Hook: hook.Run},
	})
	return code, out.String(), errb.String()
}

// TestCommandsThroughAnEngine drives the agent commands against an engine handed to
// the tree, and checks each invocation connects once, or not at all when it needs no
// server.
func TestCommandsThroughAnEngine(t *testing.T) {
	r := newRig(t)
	once := func(what string, wantDials int32, stdin string, args ...string) string {
		t.Helper()
		r.dials.Store(0)
		code, out, errOut := r.run(t, stdin, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d, stderr %q", what, code, errOut)
		}
		if n := r.dials.Load(); n != wantDials {
			t.Fatalf("%s connected %d times, want %d", what, n, wantDials)
		}
		return out
	}
	out := once("agent run", 1, "", "agent", "run", "cli/a", "--", "sh", "-c", "echo hello-from-cli; sleep 60")
	if f := strings.Fields(out); len(f) != 3 || f[1] != "cli/a" {
		t.Fatalf("agent run printed %q, want ID PATH STATE", out)
	}
	wait.For(t, 10*time.Second, "agent read to show the program's output", func() bool {
		_, out, _ := r.run(t, "", "agent", "read", "cli/a")
		return strings.Contains(out, "hello-from-cli")
	})
	// The engine has no display rows of its own: ls renders them from the agents.
	if out := once("agent ls", 1, "", "agent", "ls"); !strings.Contains(out, "PATH") || !strings.Contains(out, "cli/a") {
		t.Fatalf("agent ls:\n%s", out)
	}
	if out := once("agent get", 1, "", "agent", "get", "cli/a", "--explain"); !strings.Contains(out, "decided by:") {
		t.Fatalf("agent get --explain:\n%s", out)
	}
	// caps changes the caps and then prints the queue: two calls, one connection.
	if out := once("queue caps", 1, "", "queue", "caps", "--global", "3"); !strings.Contains(out, "/ 3 (global)") {
		t.Fatalf("queue caps:\n%s", out)
	}
	if out := once("agent kill", 1, "", "agent", "kill", "cli/a"); !strings.Contains(out, "killed cli/a") {
		t.Fatalf("agent kill:\n%s", out)
	}
	if out := once("agent wait", 1, "", "agent", "wait", "cli/a", "--until", "exited", "--timeout", "10s"); !strings.Contains(out, "killed") {
		t.Fatalf("agent wait:\n%s", out)
	}
	// Help and the schema need no server.
	once("agent --help", 0, "", "agent", "--help")
	if out := once("api schema", 0, "", "api", "schema"); !strings.Contains(out, wire.MethodAgentRun) {
		t.Fatalf("api schema does not name %s", wire.MethodAgentRun)
	}
	// A hook outside any agent has nothing to report, so it does not dial.
	once("hook without ORCR_ID", 0, "{}", "hook", "claude", "Stop")
}

// TestNoServer: a command that needs the server fails with the hint that names how to
// start one; one that needs none still works.
func TestNoServer(t *testing.T) {
	var errb, out bytes.Buffer
	notRunning := &wire.Error{Code: wire.CodeUnavailable, Message: "orcr server not running — start it with `orcr serve`"}
	o := cli.Options{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
		Connect: func(context.Context) (wire.Transport, error) { return nil, notRunning }}
	if code := cli.Run(context.Background(), []string{"orcr", "agent", "ls"}, o); code != cli.ExitError {
		t.Fatalf("agent ls without a server: exit %d", code)
	}
	if !strings.Contains(errb.String(), "orcr serve") {
		t.Fatalf("no hint: %q", errb.String())
	}
	if code := cli.Run(context.Background(), []string{"orcr", "api", "schema"}, o); code != 0 {
		t.Fatalf("api schema without a server: exit %d: %s", code, errb.String())
	}
	// `orcr serve` in a tree built without the daemon says so instead of panicking.
	errb.Reset()
	if code := cli.Run(context.Background(), []string{"orcr", "serve"}, o); code != cli.ExitError || !strings.Contains(errb.String(), "not built into") {
		t.Fatalf("serve without a daemon: exit %d %q", code, errb.String())
	}
}

func TestExitCodes(t *testing.T) {
	for _, c := range []struct {
		err  error
		want int
	}{
		{nil, cli.ExitOK},
		{errors.New("boom"), cli.ExitError},
		{&wire.Error{Code: wire.CodeMissingProgram, Message: "install tmux"}, cli.ExitMissing},
		{&wire.Error{Code: wire.CodeTimeout, Message: "too slow"}, cli.ExitTimeout},
	} {
		if got := cli.ExitCode(c.err, io.Discard); got != c.want {
			t.Errorf("ExitCode(%v) = %d, want %d", c.err, got, c.want)
		}
	}
}

// TestUsageErrorsAreOneLine: a bad flag is one error naming the help to read (not
// "Incorrect Usage" and a help page on stderr), and --version / version answer.
func TestUsageErrorsAreOneLine(t *testing.T) {
	var out, errb bytes.Buffer
	app := cli.NewApp(cli.Options{Stdout: &out, Stderr: &errb, Connect: func(context.Context) (wire.Transport, error) {
		return nil, errors.New("no server in this test")
	}})
	err := app.Run(context.Background(), []string{"orcr", "agent", "ls", "--bogus"})
	if err == nil || !strings.Contains(err.Error(), "see `orcr agent ls --help`") || errb.Len() != 0 {
		t.Fatalf("err %v, stderr %q", err, errb.String())
	}
	for _, args := range [][]string{{"orcr", "--version"}, {"orcr", "version"}} {
		out.Reset()
		if err := cli.NewApp(cli.Options{Stdout: &out, Stderr: &errb}).Run(context.Background(), args); err != nil || !strings.HasPrefix(out.String(), "orcr version ") {
			t.Fatalf("%v: %v %q", args, err, out.String())
		}
	}
}

// The usage hint of a run command missing its arguments said `orcr orcr run dispatch`.
func TestRunUsageHintsNameTheCommandOnce(t *testing.T) {
	r := newRig(t)
	for args, want := range map[string]string{
		"run dispatch x":  "orcr: missing M; usage: orcr run dispatch NAME M…",
		"run answer x M1": `orcr: missing TEXT; usage: orcr run answer NAME M TEXT`,
	} {
		code, _, errOut := r.run(t, "", strings.Fields(args)...)
		if code == 0 || !strings.Contains(errOut, want) || strings.Contains(errOut, "orcr orcr") {
			t.Errorf("orcr %s: exit %d, %q, want %q", args, code, errOut, want)
		}
	}
}
