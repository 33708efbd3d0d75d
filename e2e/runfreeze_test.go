package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"orcr/core/wire"
	runapi "orcr/orchestrate/run/api"
	schedapi "orcr/schedule/api"
	"orcr/testutil/wait"
)

const oneMilestoneBody = `request: one part
check: true

## M1 · One
depends: -
tier: small

### Goal
Write M1.txt.

### Acceptance
- [ ] M1.txt
`

// TestForkingCheckNeitherHangsTheRunNorTheServer: a check that starts a process in a
// session of its own which keeps the check's output open (`setsid … &`) held the
// milestone in "checking" past --check-timeout for ever, and SIGTERM to the server
// never completed. Now the milestone leaves checking at the timeout saying why, and a
// server stopped while such a check runs exits within 5 s.
func TestForkingCheckNeitherHangsTheRunNorTheServer(t *testing.T) {
	e, repo := newRepoEnv(t)
	seedPlansText(t, e.home, repo, oneMilestoneBody, "short", "long")
	// The escaped processes record their pids, so the test can end them.
	pids := filepath.Join(t.TempDir(), "pids")
	t.Cleanup(func() {
		b, _ := os.ReadFile(pids)
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	check := "echo checking; setsid sh -c 'exec sleep 120' & echo $! >> " + pids + "; true"
	coder := []string{"sh", "-c", `m=$(basename "$PWD"); echo "$m" > "$m.txt" && git add -A && git commit -qm "$m" && orcr run done "$m"; cat >/dev/null`}
	e.serve()

	e.must(append([]string{"run", "start", "short", "--coders", "1", "--coder", "shell", "--lead", "none",
		"--check", check, "--check-timeout", "2s", "--"}, coder...)...)
	e.must("run", "dispatch", "short", "M1")
	const why = "check timed out after 2s; a process it started kept its output open"
	// `orcr run events` says why the check failed.
	if !wait.Until(60*time.Second, func() bool { return strings.Contains(e.orcr("run", "events", "short").Out, "failed: "+why) }) {
		t.Fatalf("the forking check never ended:\n%s", runDump(e, "short"))
	}
	if !wait.Until(10*time.Second, func() bool {
		v := runView(t, e, "short")
		return len(v.Milestones) == 1 && v.Milestones[0].State != "checking"
	}) {
		t.Fatalf("M1 stays checking:\n%s", runDump(e, "short"))
	}

	// The same check with the default 10-minute timeout, under way when the server is
	// told to stop.
	e.must(append([]string{"run", "start", "long", "--coders", "1", "--coder", "shell", "--lead", "none",
		"--check", check, "--"}, coder...)...)
	e.must("run", "dispatch", "long", "M1")
	waitMilestone(t, e, "long", "M1", "checking", 60*time.Second)
	start := time.Now()
	if err := e.srv.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-e.srv.Exited():
		t.Logf("the server stopped %s after SIGTERM", time.Since(start).Round(time.Millisecond))
	case <-time.After(5 * time.Second):
		t.Fatalf("the server did not stop within 5 s of SIGTERM while a forking check ran:\n%s", e.srv.Output())
	}
}

func runView(t *testing.T, e *env, name string) runapi.RunView {
	t.Helper()
	var r runapi.RunResult
	if err := json.Unmarshal([]byte(e.must("run", "status", name, "--json")), &r); err != nil {
		t.Fatalf("run status --json: %v", err)
	}
	return r.Run
}

// TestLongListsAreBounded: every list a request carries is bounded where it enters,
// refused naming the bound (run.dispatch with 100,000 names kept the server busy for
// minutes), and the schema publishes the bounds.
func TestLongListsAreBounded(t *testing.T) {
	e := newEnv(t)
	e.serve()
	rc := e.raw()
	many := func(n int) []string { return slices.Repeat([]string{"x"}, n) }
	keys := func(n int, v any) map[string]any {
		m := map[string]any{}
		for i := range n {
			m["k"+strconv.Itoa(i)] = v
		}
		return m
	}
	for i, c := range []struct {
		method string
		params map[string]any
		bound  string
	}{
		{runapi.MethodRunDispatch, map[string]any{"name": "r", "milestones": slices.Repeat([]string{"M1"}, 100_000)}, "milestones has 100000 items, more than the 256"},
		{runapi.MethodRunHold, map[string]any{"name": "r", "milestones": many(257)}, "more than the 256"},
		{wire.MethodEventsSubscribe, map[string]any{"paths": many(257)}, "paths has 257 items, more than the 256"},
		{wire.MethodAgentSend, map[string]any{"target": "w", "keys": many(4097)}, "more than the 4096"},
		{wire.MethodAgentRun, map[string]any{"path": "w", "argv": many(4097)}, "argv has 4097 items"},
		{wire.MethodAgentRun, map[string]any{"path": "w", "argv": []string{"true"}, "env": keys(1025, "v")}, "env has 1025 items"},
		{schedapi.MethodScheduleAdd, map[string]any{"name": "s", "everySeconds": 60, "command": many(4097)}, "command has 4097 items"},
		{wire.MethodQueueCaps, map[string]any{"provider": keys(257, 1)}, "provider has 257 items"},
	} {
		b, err := json.Marshal(map[string]any{"id": strconv.Itoa(i), "method": c.method, "params": c.params})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		resp := rc.roundTrip(string(b))
		if resp.Error == nil || resp.Error.Code != wire.CodeInvalidParams || !strings.Contains(resp.Error.Message, c.bound) {
			t.Errorf("%s with a long list: %+v", c.method, resp.Error)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s with a long list answered after %s", c.method, d)
		}
	}
	var schema struct {
		Defs map[string]struct {
			Properties map[string]map[string]any `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal([]byte(e.must("api", "schema")), &schema); err != nil {
		t.Fatal(err)
	}
	if got := schema.Defs["RunMilestonesParams"].Properties["milestones"]["maxItems"]; got != float64(256) {
		t.Fatalf("schema: milestones maxItems %v, want 256", got)
	}
}
