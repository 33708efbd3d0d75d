package roles_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	acctapi "orcr/accounts/api"
	"orcr/core/wire"
	"orcr/testutil/modelserver"
	"orcr/testutil/wait"
)

// TestRoleBudget: a role's budget_usd becomes a budget on its agent's path (orcr
// budget ls shows it, with the role); the real claude's first turn spends past it, so
// the budget's stop action sends the wrap-up message (it arrives at the model as a
// user turn) and stops the agent after the grace period; a spawn under the path is
// then held with the budget as its reason. An earlier agent's spending at the same
// path does not count against a new role agent there.
func TestRoleBudget(t *testing.T) {
	t.Parallel()
	r := newClaudeRig(t)
	os.MkdirAll(filepath.Join(r.Dir, "config", "orcr"), 0o700)
	os.WriteFile(filepath.Join(r.Dir, "config", "orcr", "config.toml"), []byte("[accounts]\nbudget_grace = \"3s\"\n"), 0o600)
	r.role("spender", "providers = [\"claude:sonnet\"]\nprompt = \"spend\"\nbudget_usd = 0.05\nbudget_action = \"stop\"\n")
	r.Serve()
	if out := r.Must("role", "show", "spender"); !strings.Contains(out, "budget_action") || !strings.Contains(out, "spender.toml:4") {
		t.Fatalf("role show:\n%s", out)
	}

	// 5,000 in + 5,000 out of sonnet is about $0.09: past $0.05 in one turn.
	r.Models.Push(modelserver.Turn{Text: "Spent it.", Usage: modelserver.Usage{Input: 5000, Output: 5000}},
		modelserver.Turn{Text: "Wrapped up: nothing left.", Usage: modelserver.Usage{Input: 1, Output: 1}})
	r.Must("agent", "run", "spend/a", "--role", "spender", "--cwd", r.Work)
	a := r.WaitAgent("spend/a", 90*time.Second, "stopped by its budget", func(a wire.Agent) bool { return a.State.Terminal() })
	if a.Usage.CostUSD == nil || *a.Usage.CostUSD < 0.05 || a.State != wire.StateKilled {
		t.Fatalf("ended %s %q cost %v", a.State, a.StateReason, a.Usage.CostUSD)
	}
	if q, ok := r.RequestWith("budget is spent"); !ok || !strings.Contains(q.LastUser(), "Wrap up now") {
		t.Fatalf("the wrap-up message never reached the model (found %v)", ok)
	}
	if !strings.Contains(strings.Join(a.RoleNotes, "\n"), "budget: $0.05 on spend/a (stop)") {
		t.Fatalf("notes %q", a.RoleNotes)
	}
	out := r.Must("budget", "ls")
	if !strings.Contains(out, "spend/a") || !strings.Contains(out, "role spender") || !strings.Contains(out, "REACHED") || !strings.Contains(out, "of $0.05") {
		t.Fatalf("budget ls:\n%s", out)
	}
	r.Must("agent", "run", "spend/a/child", "--", "true")
	if q := r.Must("queue"); !strings.Contains(q, "spend/a/child") || !strings.Contains(q, "budget spend/a") {
		t.Fatalf("queue:\n%s", q)
	}
	r.Must("agent", "kill", "spend/a/child")

	// A new role agent at the path gets a budget of its own: the first one's spending
	// is not its.
	r.Models.Push(modelserver.Turn{Text: "Cheap.", Usage: modelserver.Usage{Input: 10, Output: 5}})
	r.Must("agent", "run", "spend/a", "--role", "spender", "--cwd", r.Work)
	r.WaitAgent("spend/a", 90*time.Second, "the second agent's turn", func(a wire.Agent) bool {
		return a.State == wire.StateDone && a.LastMessage == "Cheap."
	})
	var bs acctapi.BudgetListResult
	if !wait.Until(10*time.Second, func() bool {
		json.Unmarshal([]byte(r.Must("budget", "ls", "--json")), &bs)
		return len(bs.Budgets) == 1 && bs.Budgets[0].Agents == 1 && bs.Budgets[0].SpentUSD > 0
	}) || bs.Budgets[0].Reached || bs.Budgets[0].SpentUSD >= 0.05 {
		t.Fatalf("second agent's budget: %+v", bs.Budgets)
	}
}
