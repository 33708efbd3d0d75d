package spawnpolicy_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/modelserver"
	orcrrig "orcr/testutil/rig"
	"orcr/testutil/wait"
)

func newRig(t *testing.T) *orcrrig.Rig {
	t.Helper()
	r := orcrrig.New(t)
	r.OnlyAdded()
	return r
}

// script writes a shell script into the rig's work folder and returns its path.
func script(t *testing.T, r *orcrrig.Rig, name, body string) string {
	t.Helper()
	p := filepath.Join(r.Work, name)
	if err := os.WriteFile(p, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	return p
}

// children are the live agents whose parent is parent.
func children(t *testing.T, r *orcrrig.Rig, parent string) []wire.Agent {
	t.Helper()
	var res wire.ListResult
	if err := jsonOut(r, &res, "agent", "ls", "--json"); err != nil {
		t.Fatal(err)
	}
	var out []wire.Agent
	for _, a := range res.Agents {
		if a.ParentPath == parent && !a.State.Terminal() {
			out = append(out, a)
		}
	}
	return out
}

// jsonOut runs orcr args and decodes what it prints into v.
func jsonOut(r *orcrrig.Rig, v any, args ...string) error {
	return json.Unmarshal([]byte(r.Must(args...)), v)
}

// TestSpawnBombStoppedAtMaxChildren: a shell agent started with --spawn-max-children 3
// runs `orcr agent run` in a loop of 20 from its pane; three children start, the other
// 17 spawns are refused by the server with the rule named, and nothing else starts.
func TestSpawnBombStoppedAtMaxChildren(t *testing.T) {
	r := newRig(t)
	r.Serve()
	bomb := script(t, r, "bomb.sh", `i=0
while [ $i -lt 20 ]; do
  "$ORCR_BIN" agent run "c$i" -- sleep 300 2>> bomb.err || echo "refused $i" >> bomb.log
  i=$((i+1))
done
echo bomb-finished
exec sleep 300
`)
	r.Must("agent", "run", "bomb", "--spawn-max-children", "3", "--cwd", r.Work, "--", "sh", bomb)
	if !wait.Until(90*time.Second, func() bool { return strings.Contains(r.Run("agent", "read", "bomb").Out, "bomb-finished") }) {
		t.Fatalf("the loop did not finish:\n%s", r.Run("agent", "read", "bomb").Out)
	}
	kids := children(t, r, "bomb")
	if len(kids) != 3 {
		t.Fatalf("%d children running, want 3: %v", len(kids), kids)
	}
	log, _ := os.ReadFile(filepath.Join(r.Work, "bomb.log"))
	if n := strings.Count(string(log), "refused"); n != 17 {
		t.Fatalf("%d spawns refused, want 17:\n%s", n, log)
	}
	errs, _ := os.ReadFile(filepath.Join(r.Work, "bomb.err"))
	if n := strings.Count(string(errs), "spawn refused: bomb has max_children = 3 (3 running)"); n != 17 {
		t.Fatalf("%d refusals name the rule, want 17:\n%s", n, errs)
	}
	if a := r.Agent("bomb"); a.Spawn == nil || a.Spawn.MaxChildren == nil || *a.Spawn.MaxChildren != 3 {
		t.Fatalf("bomb's record: spawn %v", a.Spawn)
	}

	// The same 20 spawns at once, each in the background: still three.
	par := script(t, r, "par.sh", `i=0
while [ $i -lt 20 ]; do
  "$ORCR_BIN" agent run "p$i" -- sleep 300 2>> par.err &
  i=$((i+1))
done
wait
echo par-finished
exec sleep 300
`)
	r.Must("agent", "run", "par", "--spawn-max-children", "3", "--cwd", r.Work, "--", "sh", par)
	if !wait.Until(120*time.Second, func() bool { return strings.Contains(r.Run("agent", "read", "par").Out, "par-finished") }) {
		t.Fatalf("the parallel spawns did not finish:\n%s", r.Run("agent", "read", "par").Out)
	}
	if kids := children(t, r, "par"); len(kids) != 3 {
		t.Fatalf("%d children of par running, want 3", len(kids))
	}
	perr, _ := os.ReadFile(filepath.Join(r.Work, "par.err"))
	if n := strings.Count(string(perr), "spawn refused: par has max_children = 3 (3 running)"); n != 17 {
		t.Fatalf("%d parallel refusals name the rule, want 17:\n%s", n, perr)
	}
}

// TestSpawnDepthAndNoWidening: a tree started with max_depth 2 and max_children 2 and
// providers [shell]; each agent tries to spawn a child asking for much more
// (--spawn-max-depth 10 --spawn-max-children 50). The children's records carry the
// parent's policy, one level less deep, never what they asked; the third level is
// refused naming the agent that set the depth; a provider outside the list is
// refused naming it.
func TestSpawnDepthAndNoWidening(t *testing.T) {
	r := newRig(t)
	r.Serve()
	node := script(t, r, "node.sh", `log="$(echo "$ORCR_PATH" | tr / _).log"
"$ORCR_BIN" agent run n --spawn-max-depth 10 --spawn-max-children 50 -- sh "$0" 2>> "$log" && echo "spawned" >> "$log"
"$ORCR_BIN" agent run c --provider claude --prompt hi 2>> "$log"
echo node-finished >> "$log"
exec sleep 300
`)
	r.Must("agent", "run", "top", "--spawn-max-depth", "2", "--spawn-max-children", "2", "--spawn-providers", "shell", "--cwd", r.Work, "--", "sh", node)
	logOf := func(path string) string {
		b, _ := os.ReadFile(filepath.Join(r.Work, strings.ReplaceAll(path, "/", "_")+".log"))
		return string(b)
	}
	if !wait.Until(90*time.Second, func() bool { return strings.Contains(logOf("top/n/n"), "node-finished") }) {
		t.Fatalf("the third agent did not finish its script:\ntop: %s\ntop/n: %s\ntop/n/n: %s", logOf("top"), logOf("top/n"), logOf("top/n/n"))
	}
	mid, low := r.Agent("top/n"), r.Agent("top/n/n")
	for _, c := range []struct {
		a            wire.Agent
		depth, kids  int
		parent, want string
	}{{mid, 1, 2, "top", "max_depth = 1"}, {low, 0, 2, "top/n", "max_depth = 0"}} {
		sp := c.a.Spawn
		if sp == nil || sp.MaxDepth == nil || *sp.MaxDepth != c.depth || sp.MaxChildren == nil || *sp.MaxChildren != c.kids ||
			strings.Join(sp.Providers, ",") != "shell" {
			t.Fatalf("%s: spawn %s, want max_depth %d, max_children %d, providers [shell] (asked for 10 and 50)", c.a.Path, sp, c.depth, c.kids)
		}
		if !strings.Contains(strings.Join(c.a.RoleNotes, "\n"), "asked for more than "+c.parent+" allows") {
			t.Fatalf("%s: notes %q", c.a.Path, c.a.RoleNotes)
		}
	}
	if l := logOf("top/n/n"); !strings.Contains(l, "spawn refused: top has max_depth = 2 (top/n/n/n would be 3 levels below it)") || strings.Contains(l, "spawned") {
		t.Fatalf("the fourth level was not refused by top's max_depth:\n%s", l)
	}
	if res := r.Run("agent", "get", "top/n/n/n"); res.Code == 0 {
		t.Fatalf("a refused spawn has a record:\n%s", res.Out)
	}
	for _, p := range []string{"top", "top/n"} {
		if l := logOf(p); !strings.Contains(l, "spawned") {
			t.Fatalf("%s could not spawn its child:\n%s", p, l)
		}
	}
	if l := logOf("top/n"); !strings.Contains(l, "spawn refused: top/n has providers = [shell] (not claude)") {
		t.Fatalf("a claude spawn from top/n:\n%s", l)
	}
	if l := logOf("top"); !strings.Contains(l, "spawn refused: top has providers = [shell] (not claude)") {
		t.Fatalf("a claude spawn from top:\n%s", l)
	}
	// A root caller (the user's shell) is not bound by any agent's policy.
	r.Must("agent", "run", "top/extra", "--", "sleep", "300")
}

// TestRolePolicyAndIdentity: a role's [spawn] table and identity bind the agents made
// from it: from the lead's pane a spawn without a role from its roles list is refused,
// one worker starts (acting as the lead's identity, with the lead's policy), and a
// second is refused at max_children = 1.
func TestRolePolicyAndIdentity(t *testing.T) {
	r := newRig(t)
	roles := filepath.Join(r.Config, "orcr", "roles")
	ids := filepath.Join(r.Config, "orcr", "identities", "keeper")
	for _, d := range []string{roles, ids} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(ids, "identity.toml"), []byte("description = \"Keeps the tree small.\"\n"), 0o600)
	os.WriteFile(filepath.Join(roles, "lead.toml"), []byte(`providers = ["shell"]
identity = "keeper"
[spawn]
max_children = 1
roles = ["worker"]
`), 0o600)
	os.WriteFile(filepath.Join(roles, "worker.toml"), []byte("providers = [\"shell\"]\n"), 0o600)
	r.Vars = append(r.Vars, "XDG_DATA_HOME="+filepath.Join(r.Dir, "data"))
	r.Serve()
	lead := script(t, r, "lead.sh", `"$ORCR_BIN" agent run a -- sleep 300 2>> lead.log
"$ORCR_BIN" agent run w1 --role worker -- sleep 300 2>> lead.log && echo spawned-w1 >> lead.log
"$ORCR_BIN" agent run w2 --role worker -- sleep 300 2>> lead.log
echo lead-finished >> lead.log
exec sleep 300
`)
	r.Must("agent", "run", "lead", "--role", "lead", "--cwd", r.Work, "--", "sh", lead)
	logf := filepath.Join(r.Work, "lead.log")
	var log string
	if !wait.Until(60*time.Second, func() bool { b, _ := os.ReadFile(logf); log = string(b); return strings.Contains(log, "lead-finished") }) {
		t.Fatalf("the lead's script did not finish:\n%s\n%s", log, r.Run("agent", "read", "lead").Out)
	}
	for _, want := range []string{"spawn refused: lead has roles = [worker] (no role)", "spawned-w1", "spawn refused: lead has max_children = 1 (1 running)"} {
		if !strings.Contains(log, want) {
			t.Fatalf("lead.log lacks %q:\n%s", want, log)
		}
	}
	w := r.Agent("lead/w1")
	if w.Identity != "keeper" || w.Role != "worker" || w.Spawn.String() != "max_children = 1, roles = [worker]" {
		t.Fatalf("lead/w1: identity %q role %q spawn %s", w.Identity, w.Role, w.Spawn)
	}
	if out := r.Must("role", "show", "lead"); !strings.Contains(out, "identity") || !strings.Contains(out, "keeper") ||
		!strings.Contains(out, "max_children = 1, roles = [worker]") || !strings.Contains(out, "(lead.toml:3)") {
		t.Fatalf("role show lead:\n%s", out)
	}
	if out := r.Must("agent", "get", "lead"); !strings.Contains(out, "max_children = 1, roles = [worker]") || !strings.Contains(out, "keeper") {
		t.Fatalf("agent get lead:\n%s", out)
	}
}

// TestSpawnBudgetCountsTheSubtree: a shell agent with --spawn-budget-usd 0.05 spawns a
// real claude from its pane, whose one turn (5,000 in + 5,000 out of sonnet, about
// $0.09) spends past the bound; the agent's next spawn is refused with the bound and
// what its subtree spent.
func TestSpawnBudgetCountsTheSubtree(t *testing.T) {
	r := newRig(t)
	r.Claude()
	r.Serve()
	r.Models.Push(modelserver.Turn{Text: "Spent it.", Usage: modelserver.Usage{Input: 5000, Output: 5000}})
	boss := script(t, r, "boss.sh", `"$ORCR_BIN" agent run c1 --provider claude --model sonnet --prompt spend 2>> boss.log && echo spawned-c1 >> boss.log
while [ ! -f go ]; do sleep 0.2; done
"$ORCR_BIN" agent run c2 -- sleep 300 2>> boss.log || echo refused-c2 >> boss.log
echo boss-finished >> boss.log
exec sleep 300
`)
	r.Must("agent", "run", "boss", "--spawn-budget-usd", "0.05", "--cwd", r.Work, "--", "sh", boss)
	if !wait.Until(60*time.Second, func() bool { return r.Run("agent", "get", "boss/c1").Code == 0 }) {
		b, _ := os.ReadFile(filepath.Join(r.Work, "boss.log"))
		t.Fatalf("boss did not spawn c1:\n%s\n%s", b, r.Run("agent", "read", "boss").Out)
	}
	c1 := r.WaitAgent("boss/c1", 90*time.Second, "c1's priced turn", func(a wire.Agent) bool {
		return a.LastMessage == "Spent it." && a.Usage.CostUSD != nil && *a.Usage.CostUSD >= 0.05
	})
	if err := os.WriteFile(filepath.Join(r.Work, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	logf := filepath.Join(r.Work, "boss.log")
	var log string
	if !wait.Until(60*time.Second, func() bool { b, _ := os.ReadFile(logf); log = string(b); return strings.Contains(log, "boss-finished") }) {
		t.Fatalf("boss did not finish:\n%s", log)
	}
	want := fmt.Sprintf("spawn refused: boss has budget_usd = 0.05 ($%.2f spent by it and the agents under it)", *c1.Usage.CostUSD)
	if !strings.Contains(log, "spawned-c1") || !strings.Contains(log, want) || !strings.Contains(log, "refused-c2") {
		t.Fatalf("boss.log lacks %q:\n%s", want, log)
	}
}
