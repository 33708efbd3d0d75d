package ui

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"orcr/adapters/shell"
	"orcr/core"
	"orcr/core/socket"
	"orcr/core/wire"
	"orcr/pty"
	"orcr/store"
	"orcr/testutil/wait"
)

// TestSeeTheAgentRealPane drives the dashboard against a real server (the kernel's
// methods in process) with a real pty and real git: a shell agent in its own worktree
// prints 300 lines, a coloured last line, and changes a file. The preview shows the
// colour as the agent printed it, pgup pages back through the scrollback the server
// reads, and D shows the worktree's diff against main.
func TestSeeTheAgentRealPane(t *testing.T) {
	home, repo := t.TempDir(), t.TempDir()
	git := func(args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", repo}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(repo, "a.txt"), []byte("kept\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git("add", ".")
	git("commit", "-qm", "base")

	st, err := store.Open(home+"/store", nil)
	if err != nil {
		t.Fatal(err)
	}
	eng, err := core.NewEngine(core.Options{Store: st, Host: pty.New(pty.Options{KillGrace: time.Second}),
		Providers: []core.Provider{shell.New()}, Home: home, Socket: home + "/orcr.sock"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		eng.Close(ctx)
		st.Close()
	})
	script := `i=1; while [ $i -le 300 ]; do echo "sb-line-$i"; i=$((i+1)); done; echo added-by-agent >> a.txt; ` +
		`printf '\033[32mready-mark\033[0m\n'; exec sleep 300`
	if _, err := eng.Run(ctx, wire.RunParams{Path: "see/w", Cwd: repo, Worktree: "agent-w", Argv: []string{"sh", "-c", script}}); err != nil {
		t.Fatal(err)
	}
	wait.For(t, 30*time.Second, "the agent's last line", func() bool {
		rd, err := eng.Read(ctx, wire.ReadParams{Target: "see/w"})
		return err == nil && strings.Contains(rd.Text, "ready-mark")
	})
	agents, err := eng.List(ctx, wire.ListParams{})
	if err != nil {
		t.Fatal(err)
	}
	ip, err := socket.NewInProcess(core.KernelMethods(eng))
	if err != nil {
		t.Fatal(err)
	}
	m, err := New(ctx, ip, Options{Mode: "in-process"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	m.Update(infoMsg{info: wire.InfoResult{Version: 1, Host: "pty"}})
	m.Update(listMsg{agents: agents})
	p := newPump(t, m)
	before := m.selectedID()
	m.tree.selectNode(m.idx.byPath["see/w"])
	p.run(m.afterSelection(before))

	// The colour arrives as the agent printed it (the frame, not its plain text).
	p.until(20*time.Second, "the green ready-mark in the preview", func(string) bool {
		return strings.Contains(screen(t, m), "\x1b[32mready-mark")
	})

	// pgup pages back; the preview reads deeper scrollback as it goes.
	p.press("tab")
	for i := 0; i < 80 && !strings.Contains(plain(m.preview.View()), "sb-line-150"); i++ {
		p.press("pgup")
		p.until(20*time.Second, "the scrollback read", func(string) bool { return !m.readInFlight })
	}
	if v := plain(m.preview.View()); !strings.Contains(v, "sb-line-150") || strings.Contains(v, "ready-mark") {
		t.Fatalf("paging up did not reach sb-line-150 of the scrollback:\n%s", v)
	}

	// D: the worktree's diff against main.
	p.press("D")
	p.until(30*time.Second, "the diff", func(f string) bool {
		return strings.Contains(f, "+added-by-agent") && strings.Contains(f, "against main")
	})
	p.press("esc")
	if len(m.dialogs) != 0 {
		t.Fatal("esc did not close the diff")
	}
}
