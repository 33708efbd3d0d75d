package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/wait"
)

// Spawns the server acknowledged survive a kill -9 that comes right after the last
// reply, while the latest are still being admitted and launched: after the restart
// every one of them is there and ends up working, each in exactly one tmux window
// (none launched twice, none lost). A spawn admitted at once is stored as starting
// with its agent.spawned event in the commit that precedes the reply; one killed
// before its launch stored the pane is adopted by its window's name or, with no
// window, queued again.
func TestTmuxAcknowledgedSpawnsSurviveKill9(t *testing.T) {
	e := newTmuxEnv(t)
	e.serve()
	const n = 20
	for i := range n {
		if out := e.must("agent", "run", fmt.Sprintf("k/a%d", i), "--", "sleep", "300"); !strings.Contains(out, "queued") {
			t.Fatalf("agent run answered %q, want it queued", out)
		}
	}
	e.kill9()
	e.serve()
	var as []wire.Agent
	wait.For(t, 30*time.Second, "every acknowledged spawn working in a pane", func() bool {
		as = lsJSON(t, e, "k/**")
		working := 0
		for _, a := range as {
			if a.State == wire.StateWorking || a.State == wire.StateIdle {
				if a.PaneID != "" {
					working++
				}
			}
		}
		return len(as) == n && working == n
	})
	out, err := exec.Command("tmux", "-S", filepath.Join(e.home, "tmux.sock"), "list-windows", "-a", "-F", "#{window_name}").Output()
	if err != nil {
		t.Fatal(err)
	}
	windows := map[string]int{}
	for _, name := range strings.Fields(string(out)) {
		windows[name]++
	}
	for i := range n {
		if path := fmt.Sprintf("k/a%d", i); windows[path] != 1 {
			t.Errorf("%s has %d tmux windows, want 1", path, windows[path])
		}
	}
}
