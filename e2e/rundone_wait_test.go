package e2e

import (
	"bufio"
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"orcr/testutil/wait"
)

// TestRunDoneWaitsForARestartingServer: a coder's `orcr run done` while the server
// is down (killed, about to be restarted) does not fail with "server not running":
// it says it waits, and reports to the server once one answers.
func TestRunDoneWaitsForARestartingServer(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait.Scale(90*time.Second))
	defer cancel()
	cmd := exec.CommandContext(ctx, e.bin, "run", "done", "M1")
	cmd.Env = e.vars
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	var said []string
	for sc.Scan() {
		said = append(said, sc.Text())
		if strings.Contains(sc.Text(), "waiting up to") {
			break
		}
	}
	if len(said) == 0 || !strings.Contains(said[len(said)-1], "the server is not running; waiting") {
		t.Fatalf("run done without a server said %q", said)
	}
	e.serve()
	for sc.Scan() {
		said = append(said, sc.Text())
	}
	err = cmd.Wait()
	all := strings.Join(said, "\n")
	if strings.Contains(all, "orcr server not running") {
		t.Fatalf("run done failed on the down server instead of waiting: %s", all)
	}
	// The server answered: this shell is no coder of a run, which it says.
	if err == nil || !strings.Contains(all, "works only inside a run's coder pane") || strings.Contains(all, "panic") {
		t.Fatalf("run done after the restart: %v, %q, %q", err, out.String(), all)
	}
}
