package e2e

import (
	"strings"
	"testing"
	"time"

	"orcr/testutil/wait"
)

func TestTopRefreshesFromEvents(t *testing.T) {
	e := newEnv(t)
	e.serve()
	e.must("agent", "run", "proj/a", "--", "sleep", "300")
	once := e.must("top", "--once")
	if !strings.Contains(once, "proj/") || !strings.Contains(once, "  a   ") {
		t.Fatalf("top --once:\n%s", once)
	}
	term := newTerm(t, e)
	term.keys("orcr top", "Enter")
	wait.For(t, 10*time.Second, "top shows proj/a", func() bool { return strings.Contains(term.screen(), "  a   ") })
	e.must("agent", "run", "proj/sub/b", "--", "sleep", "300")
	wait.For(t, 10*time.Second, "top shows the new agent without a keypress", func() bool {
		s := term.screen()
		return strings.Contains(s, "sub/") && strings.Contains(s, "    b  ")
	})
	e.must("agent", "kill", "proj/a")
	// An ended agent leaves the tree, as in the dashboard, and is counted.
	wait.For(t, 10*time.Second, "top shows the kill", func() bool {
		s := term.screen()
		return strings.Contains(s, "1 ended not shown") && !strings.Contains(s, "  a   ")
	})
	term.keys("C-c")
}
