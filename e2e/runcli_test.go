package e2e

import (
	"strings"
	"testing"
)

// TestRunHoldTakesAReason: `orcr run hold RUN M2 "reason"` holds M2 with that reason
// and exits 0 — it held M2 and then exited 1 with `no milestone "reason"`. Several
// milestones and --reason work as before; a reason given both ways, or no milestone
// at all, is refused before anything is held.
func TestRunHoldTakesAReason(t *testing.T) {
	e, repo := newRepoEnv(t)
	seedPlans(t, e.home, repo, "demo")
	e.serve()
	e.must("run", "start", "demo", "--coders", "1", "--coder", "shell", "--lead", "none", "--", "sh", "-c", "cat >/dev/null")

	if res := e.orcr("run", "hold", "demo", "M2", "waiting for", "the API"); res.Code != 0 {
		t.Fatalf("hold with a reason: exit %d\n%s%s", res.Code, res.Out, res.Err)
	}
	e.must("run", "hold", "demo", "M3", "M4", "--reason", "after M2")
	if res := e.orcr("run", "hold", "demo", "M5", "why", "--reason", "why"); res.Code == 0 || !strings.Contains(res.Err, "give the reason once") {
		t.Fatalf("a reason given twice: exit %d %s", res.Code, res.Err)
	}
	if res := e.orcr("run", "hold", "demo", "flaky"); res.Code == 0 || !strings.Contains(res.Err, `no milestone "flaky"`) {
		t.Fatalf("a hold naming no milestone: exit %d %s", res.Code, res.Err)
	}
	want := map[string]string{"M2": "waiting for the API", "M3": "after M2", "M4": "after M2"}
	for _, m := range runView(t, e, "demo").Milestones {
		reason, held := want[m.ID]
		switch {
		case held && (m.State != "held" || !strings.Contains(m.Reason, reason)):
			t.Errorf("%s is %s (%q), want held with %q", m.ID, m.State, m.Reason, reason)
		case !held && m.State == "held":
			t.Errorf("%s is held: %q", m.ID, m.Reason)
		}
	}
}
