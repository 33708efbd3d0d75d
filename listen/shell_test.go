package listen

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestShellLinesJSONAndGarbage(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "out.sh")
	body := `#!/bin/sh
echo "plain line one"
echo ""
echo '{"id": "T-1", "title": "Fix it", "n": 3, "tags": ["a", "b"], "meta": {"x": 1}, "gone": null}'
echo '{"id": 42, "title": "numeric id"}'
echo '{"title": "no id"}'
echo '{"id": "broken"'
echo "plain line one"
echo '{"id": "T-1", "title": "duplicate"}'
printf 'bell\007here\n'
head -c 70000 /dev/zero | tr '\0' 'z'; echo
echo "last"
`
	if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
		t.Fatal(err)
	}
	run, err := ShellSource{Command: script, Timeout: 10 * time.Second}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range run.Events {
		ids = append(ids, e.ID)
	}
	if strings.Join(ids, "|") != "plain line one|T-1|42|last" {
		t.Fatalf("events %q", ids)
	}
	t1 := run.Events[1].Vars
	if t1["title"] != "Fix it" || t1["n"] != "3" || t1["tags"] != `["a","b"]` || t1["meta"] != `{"x":1}` || t1["gone"] != "" || !strings.HasPrefix(t1["line"], "{") {
		t.Fatalf("T-1 vars %v", t1)
	}
	if run.Events[0].Vars["line"] != "plain line one" {
		t.Fatalf("plain vars %v", run.Events[0].Vars)
	}
	if run.Garbage != 4 || len(run.Samples) != 4 || !strings.Contains(run.Warning(), "4 unreadable") {
		t.Fatalf("garbage %d %q / %s", run.Garbage, run.Samples, run.Warning())
	}
}

func TestShellNonZeroExitGivesNoEvents(t *testing.T) {
	run, err := ShellSource{Command: "echo a; echo b; echo boom >&2; exit 3"}.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "exited 3: boom") {
		t.Fatalf("err %v", err)
	}
	if len(run.Events) != 0 || run.ExitCode != 3 || run.Stderr != "boom" {
		t.Fatalf("run %+v", run)
	}
	_, err = ShellSource{Command: "/nonexistent/command"}.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "exited 127") {
		t.Fatalf("missing command: %v", err)
	}
}

func TestShellHangIsKilledAtTimeout(t *testing.T) {
	for _, cmd := range []string{
		"echo early; sleep 30",
		"(setsid sleep 30 &); echo early; sleep 30", // a grandchild outside the group keeps stdout open
	} {
		start := time.Now()
		run, err := ShellSource{Command: cmd, Timeout: 300 * time.Millisecond}.Run(context.Background())
		took := time.Since(start)
		if err == nil || !strings.Contains(err.Error(), "killed after its 300ms timeout") {
			t.Fatalf("%s: err %v", cmd, err)
		}
		if len(run.Events) != 0 || took > 5*time.Second || took < 300*time.Millisecond {
			t.Fatalf("%s: %d events after %s", cmd, len(run.Events), took)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { time.Sleep(100 * time.Millisecond); cancel() }()
	if _, err := (ShellSource{Command: "sleep 30", Timeout: time.Minute}).Run(ctx); err == nil || !strings.Contains(err.Error(), "canceled") {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestShellEnvDirAndOutputCap(t *testing.T) {
	dir := t.TempDir()
	run, err := ShellSource{Command: `echo "$ORCR_TEST_VAR in $(pwd)"`, Dir: dir, Env: []string{"ORCR_TEST_VAR=hello"}}.Run(context.Background())
	if err != nil || len(run.Events) != 1 || run.Events[0].ID != "hello in "+dir {
		t.Fatalf("%+v %v", run, err)
	}
	// Far more output than is read: the command still finishes and the run is bounded.
	run, err = ShellSource{Command: "head -c 9000000 /dev/zero | tr '\\0' 'y' | fold -w 100", Timeout: 20 * time.Second}.Run(context.Background())
	if err != nil || len(run.Events) != 1 || !run.Truncated || !strings.Contains(run.Warning(), "output past 4 MiB") {
		t.Fatalf("flood: %d events, %v", len(run.Events), err)
	}
	long := strings.Repeat("q", 300)
	run, _ = ShellSource{Command: "echo " + long}.Run(context.Background())
	if len(run.Events) != 1 || !strings.HasPrefix(run.Events[0].ID, "sha256:") || run.Events[0].Vars["line"] != long {
		t.Fatalf("long id: %+v", run.Events)
	}
}
