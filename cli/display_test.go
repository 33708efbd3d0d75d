package cli_test

import (
	"strings"
	"testing"
	"time"

	"orcr/testutil/wait"
)

// TestTokensAndCostReadTheSame: a shell agent uses no model, so every surface shows
// its tokens and cost as "-" (never "$0.00"), in the notation core formats for all.
func TestTokensAndCostReadTheSame(t *testing.T) {
	r := newRig(t)
	if code, _, errOut := r.run(t, "", "agent", "run", "cost/sh", "--", "sh", "-c", "echo up; sleep 60"); code != 0 {
		t.Fatalf("agent run: %s", errOut)
	}
	wait.For(t, 10*time.Second, "the agent to run", func() bool {
		_, out, _ := r.run(t, "", "agent", "read", "cost/sh")
		return strings.Contains(out, "up")
	})
	row := func(out, first string) []string {
		for _, l := range strings.Split(out, "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == first {
				return f
			}
		}
		t.Fatalf("no row %s in:\n%s", first, out)
		return nil
	}
	_, ls, _ := r.run(t, "", "agent", "ls")
	if f := row(ls, "cost/sh"); len(f) < 7 || f[5] != "-" || f[6] != "-" {
		t.Fatalf("agent ls row %q: TOKENS and COST should be -", f)
	}
	_, get, _ := r.run(t, "", "agent", "get", "cost/sh")
	if f := row(get, "cost:"); len(f) != 2 || f[1] != "-" || strings.Contains(get, "$") {
		t.Fatalf("agent get shows a cost for a shell agent:\n%s", get)
	}
	_, top, _ := r.run(t, "", "top", "--once")
	if f := row(top, "sh"); len(f) < 6 || f[len(f)-2] != "-" || f[len(f)-1] != "-" {
		t.Fatalf("top row %q: tokens and cost should be -", f)
	}
	// usage leaves shell agents out unless asked for them.
	_, usage, _ := r.run(t, "", "usage", "--provider", "shell")
	if f := row(usage, "shell"); f[len(f)-1] != "-" {
		t.Fatalf("usage row %q: cost should be -, not $0.00", f)
	}
}
