package roles_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/modelserver"
	"orcr/testutil/wait"
)

// environOf is the environment a process was started with (/proc/PID/environ).
func environOf(t *testing.T, pid int) []string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatalf("environ of %d: %v", pid, err)
	}
	return strings.Split(string(b), "\x00")
}

func hasEnv(env []string, kv string) bool {
	for _, x := range env {
		if x == kv {
			return true
		}
	}
	return false
}

// Env values (--env, a role's env, {{secret.NAME}} from secrets.toml) reach the agent's
// program but nothing orcr shows or stores: a role env OPENAI_API_KEY appeared in agent get
// and ls, in the store and 9 times in an events.subscribe stream. After a kill -9 and a
// restart, a resumed agent still gets them.
func TestEnvValuesReachTheProgramButAreNeverEchoed(t *testing.T) {
	t.Parallel()
	r := newClaudeRig(t)
	const flagValue, roleValue, secretValue = "sk-test-123", "sk-role-456", "sk-secret-789"
	values := []string{flagValue, roleValue, secretValue}
	secrets := filepath.Join(r.Dir, "config", "orcr", "secrets.toml")
	if err := os.WriteFile(secrets, []byte("ROLE_SECRET = \""+secretValue+"\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.role("keyed", "providers = [\"claude:sonnet\"]\n[env]\nOPENAI_API_KEY = \""+roleValue+"\"\nROLE_TOKEN = \"{{secret.ROLE_SECRET}}\"\n")
	r.Serve()

	// A subscriber from before the spawns sees every event the spawns make.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := r.Srv.Client().Subscribe(ctx, wire.SubscribeParams{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var stream strings.Builder
	go func() {
		for ev := range ch {
			b, _ := json.Marshal(ev)
			mu.Lock()
			stream.Write(b)
			stream.WriteByte('\n')
			mu.Unlock()
		}
	}()

	r.Must("agent", "run", "sh/x", "--env", "OPENAI_API_KEY="+flagValue, "--", "sh", "-c", "echo got=$OPENAI_API_KEY; exec cat")
	wait.For(t, 30*time.Second, "the pane shows the --env value", func() bool {
		return strings.Contains(r.Run("agent", "read", "sh/x").Out, "got="+flagValue)
	})
	r.Models.Push(modelserver.Turn{Text: "Noted.", Usage: modelserver.Usage{Input: 10, Output: 2}})
	r.Must("agent", "run", "mem/a", "--role", "keyed", "--prompt", "remember PELICAN-42", "--cwd", r.Work)
	first := r.WaitAgent("mem/a", 90*time.Second, "first turn", func(a wire.Agent) bool { return a.State == wire.StateDone && a.LastMessage == "Noted." })
	env := environOf(t, first.PID)
	if !hasEnv(env, "OPENAI_API_KEY="+roleValue) || !hasEnv(env, "ROLE_TOKEN="+secretValue) {
		t.Fatalf("claude (pid %d) did not get the role's env values", first.PID)
	}

	echoed := func(where, text string) {
		t.Helper()
		for _, v := range values {
			if strings.Contains(text, v) {
				if len(text) > 4000 { // a store file: binary, and the name says enough
					text = ""
				}
				t.Fatalf("%s holds the env value %q:\n%s", where, v, text)
			}
		}
	}
	for _, args := range [][]string{{"agent", "get", "sh/x", "--json"}, {"agent", "get", "mem/a", "--json"}, {"agent", "ls", "--json"}} {
		out := r.Must(args...)
		if !strings.Contains(out, "OPENAI_API_KEY") {
			t.Fatalf("%v does not name the env: %s", args, out)
		}
		echoed(strings.Join(args, " "), out)
	}
	wait.For(t, 10*time.Second, "the subscriber saw mem/a's turn", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return strings.Contains(stream.String(), "Noted.")
	})
	mu.Lock()
	echoed("the events.subscribe stream", stream.String())
	mu.Unlock()

	// kill -9: whatever badger holds on disk (memtable log, value log, tables).
	r.Srv.Kill9()
	store := filepath.Join(r.Dir, "orcr-home", "store")
	files := 0
	filepath.WalkDir(store, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files++
		echoed(p, string(b))
		return nil
	})
	if files == 0 {
		t.Fatalf("no files under %s", store)
	}

	// After the restart the values wait where only a launch reads them: a resume gets them.
	r.Serve()
	r.WaitAgent("mem/a", 60*time.Second, "ended with its server", func(a wire.Agent) bool { return a.State.Terminal() })
	r.Models.Push(modelserver.Turn{Text: "Still PELICAN-42.", Usage: modelserver.Usage{Input: 10, Output: 3}})
	r.Must("agent", "resume", "mem/a", "--prompt", "and the word?")
	b := r.WaitAgent("mem/a", 90*time.Second, "resumed turn", func(a wire.Agent) bool {
		return a.State == wire.StateDone && a.LastMessage == "Still PELICAN-42."
	})
	env = environOf(t, b.PID)
	if b.ID == first.ID || !hasEnv(env, "OPENAI_API_KEY="+roleValue) || !hasEnv(env, "ROLE_TOKEN="+secretValue) {
		t.Fatalf("resumed claude (%s, pid %d) did not get the role's env values", b.ID, b.PID)
	}
	echoed("agent get after resume", r.Must("agent", "get", "mem/a", "--json"))

	// A secret secrets.toml lacks fails the spawn, naming it; a secrets file others can read
	// is refused with the fix.
	if res := r.Run("agent", "run", "sh/y", "--env", "K={{secret.NOPE}}", "--", "sh"); res.Code == 0 || !strings.Contains(res.Err, `"NOPE"`) {
		t.Fatalf("unknown secret: exit %d %s", res.Code, res.Err)
	}
	if err := os.Chmod(secrets, 0o644); err != nil {
		t.Fatal(err)
	}
	if res := r.Run("agent", "run", "sh/z", "--env", "K={{secret.ROLE_SECRET}}", "--", "sh"); res.Code == 0 || !strings.Contains(res.Err, "chmod 600 "+secrets) {
		t.Fatalf("secrets file 0644: exit %d %s", res.Code, res.Err)
	}
}
