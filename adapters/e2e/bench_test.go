package e2e_test

import (
	"context"
	"fmt"
	"orcr/testutil/clis"
	"orcr/testutil/rig"
	"orcr/testutil/wait"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"orcr/core/socket"
	"orcr/core/wire"
	"orcr/testutil/apiclient"
	"orcr/testutil/modelserver"
)

// BenchmarkClaudeRunToWorking measures `orcr agent run --provider claude` until the
// agent is working (reported by claude's UserPromptSubmit hook through orcr), and
// the same claude command started by hand in tmux until that hook fires. Compare the
// two ns/op figures (target: orcr ≤ 1.2× by hand).
func BenchmarkClaudeRunToWorking(b *testing.B) {
	bin := clis.Find(b, "claude", "ORCR_CLAUDE_BIN")
	srv, err := modelserver.Start()
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	srv.SetDefault(modelserver.Turn{Text: "ok", Usage: modelserver.Usage{Input: 1, Output: 1}, Delay: 2 * time.Second})
	dir := b.TempDir()
	cfg := filepath.Join(dir, "claude-config")
	work := filepath.Join(dir, "work")
	os.MkdirAll(cfg, 0o700)
	os.MkdirAll(work, 0o755)
	work, _ = filepath.EvalSymlinks(work)
	os.WriteFile(filepath.Join(cfg, ".claude.json"), []byte(fmt.Sprintf(
		`{"hasCompletedOnboarding":true,"theme":"dark","projects":{%q:{"hasTrustDialogAccepted":true}}}`, work)), 0o600)
	claudeEnv := []string{"CLAUDE_CONFIG_DIR=" + cfg, "ANTHROPIC_BASE_URL=" + srv.URL, "ANTHROPIC_AUTH_TOKEN=t", "DISABLE_AUTOUPDATER=1"}

	// orcr, and orcr with the agent confined by Landlock (DESIGN §16: target ≤ 1.1×
	// the unconfined start).
	viaOrcr := func(sandbox ...string) func(b *testing.B) {
		return func(b *testing.B) { claudeViaOrcr(b, bin, work, claudeEnv, sandbox...) }
	}
	b.Run("orcr", viaOrcr())
	b.Run("orcr-sandboxed", viaOrcr("--sandbox"))
	b.Run("tmux-by-hand", func(b *testing.B) {
		clis.Program(b, "tmux", "apt-get install tmux")
		sock := fmt.Sprintf("orcr-bench-%d-%d", os.Getpid(), time.Now().UnixNano()) // b.Run calls this more than once
		defer exec.Command("tmux", "-L", sock, "kill-server").Run()
		// A session that stays keeps the server up between runs: killing the only
		// session would end the server while the next new-session races it.
		if out, err := exec.Command("tmux", "-L", sock, "-f", "/dev/null", "new-session", "-d", "-s", "keep", "tail", "-f", "/dev/null").CombinedOutput(); err != nil {
			b.Fatalf("tmux: %v %s", err, out)
		}
		var total time.Duration
		for i := 0; i < b.N; i++ {
			mark := filepath.Join(dir, fmt.Sprintf("hook-%d", i))
			settings := filepath.Join(dir, "settings.json")
			os.WriteFile(settings, []byte(`{"hooks":{"UserPromptSubmit":[{"matcher":"","hooks":[{"type":"command","command":"touch `+mark+`"}]}]}}`), 0o600)
			start := time.Now()
			sess := fmt.Sprintf("s%d", i)
			args := []string{"-L", sock, "new-session", "-d", "-s", sess, "-x", "200", "-y", "50", "-c", work, "env"}
			args = append(args, claudeEnv...)
			args = append(args, bin, "--settings", settings, "hi")
			if out, err := exec.Command("tmux", args...).CombinedOutput(); err != nil {
				b.Fatalf("tmux: %v %s", err, out)
			}
			// A steady 5 ms poll: the time to the hook is what is measured.
			if !wait.Every(60*time.Second, 5*time.Millisecond, func() bool { _, err := os.Stat(mark); return err == nil }) {
				b.Fatalf("the UserPromptSubmit hook never wrote %s within %s", mark, wait.Scale(60*time.Second))
			}
			total += time.Since(start)
			exec.Command("tmux", "-L", sock, "kill-session", "-t", sess).Run()
		}
		b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/start")
	})
}

// newOrcrB is a served orcr for a benchmark.
func newOrcrB(b *testing.B, extra ...string) *rig.Rig {
	e := rig.New(b, extra...)
	e.Serve()
	return e
}

// claudeViaOrcr is the orcr side of BenchmarkClaudeRunToWorking; sandbox are more
// flags of agent run (--sandbox).
func claudeViaOrcr(b *testing.B, bin, work string, claudeEnv []string, sandbox ...string) {
	e := newOrcrB(b, append(claudeEnv, "ORCR_CLAUDE_BIN="+bin)...)
	// The state change is taken from the event stream, as the by-hand side takes
	// the hook's mark file: neither side adds polling delay.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c, err := apiclient.Dial(ctx, socket.SocketPath(e.Home), "")
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	info, err := c.Info(ctx)
	if err != nil {
		b.Fatal(err)
	}
	events, err := c.Subscribe(ctx, wire.SubscribeParams{After: info.LastSeq, Paths: []string{"bench/**"}})
	if err != nil {
		b.Fatal(err)
	}
	var total time.Duration
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("bench/a%d", i)
		start := time.Now()
		e.Must(append([]string{"agent", "run", name, "--provider", "claude", "--cwd", work, "--prompt", "hi"}, sandbox...)...)
		timeout := time.After(60 * time.Second)
	wait:
		for {
			select {
			case ev := <-events:
				if a := ev.Agent; a != nil && a.Path == name &&
					(a.State == wire.StateWorking && a.StateSource == "hook" || a.State == wire.StateDone) {
					break wait
				}
			case <-timeout:
				b.Fatalf("%s never reported working", name)
			}
		}
		total += time.Since(start)
		e.Must("agent", "kill", name, "--yes")
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/start")
}
