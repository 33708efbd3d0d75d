package spawnpolicy_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
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
