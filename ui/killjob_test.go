package ui

import (
	"context"
	"fmt"
	"reflect"
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

// pump runs a model's commands for real and feeds their messages back to it, one at a
// time on the test's goroutine (as the program would), so a test can look at the frame
// between any two messages.
type pump struct {
	t    *testing.T
	m    *Model
	msgs chan tea.Msg
	done chan struct{}
}

func newPump(t *testing.T, m *Model) *pump {
	p := &pump{t: t, m: m, msgs: make(chan tea.Msg), done: make(chan struct{})}
	t.Cleanup(func() { close(p.done) })
	return p
}

func (p *pump) run(cmd tea.Cmd) {
	if cmd == nil {
		return
	}
	go func() {
		msg := cmd()
		select {
		case p.msgs <- msg:
		case <-p.done:
		}
	}()
}

func (p *pump) deliver(msg tea.Msg) {
	if b, ok := msg.(tea.BatchMsg); ok {
		for _, c := range b {
			p.run(c)
		}
		return
	}
	if v := reflect.ValueOf(msg); v.IsValid() && v.Kind() == reflect.Slice && v.Type().Elem() == reflect.TypeOf(tea.Cmd(nil)) {
		for i := 0; i < v.Len(); i++ {
			p.run(v.Index(i).Interface().(tea.Cmd))
		}
		return
	}
	if msg == nil {
		return
	}
	_, cmd := p.m.Update(msg)
	p.run(cmd)
}

// press sends keys through Update and runs what they ask for.
func (p *pump) press(keys ...string) {
	for _, k := range keys {
		_, cmd := p.m.Update(key(k))
		p.run(cmd)
	}
}

// until delivers messages until cond holds for the frame (plain text).
func (p *pump) until(timeout time.Duration, what string, cond func(frame string) bool) string {
	p.t.Helper()
	deadline := time.After(wait.Scale(timeout))
	for {
		frame := plain(screen(p.t, p.m))
		if cond(frame) {
			return frame
		}
		select {
		case msg := <-p.msgs:
			p.deliver(msg)
		case <-deadline:
			p.t.Fatalf("timed out after %s waiting for %s; the frame:\n%s", wait.Scale(timeout), what, frame)
		}
	}
}

// TestKillRunsInBackgroundWithProgress kills three real shell agents from the dashboard.
// Their programs ignore SIGHUP, so each kill waits out the host's grace: the dialog
// closes at once, the status bar counts the kills as they end, and the end says how many
// of how many were killed — no single call (and so no single deadline) spans the fleet.
func TestKillRunsInBackgroundWithProgress(t *testing.T) {
	home := t.TempDir()
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
	paths := []string{"k/a", "k/b", "k/c"}
	for _, path := range paths {
		if _, err := eng.Run(ctx, wire.RunParams{Path: path,
			Argv: []string{"sh", "-c", `trap "" HUP TERM; echo ignoring-hup; exec sleep 300`}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, path := range paths {
		wait.For(t, 30*time.Second, path+" to ignore SIGHUP", func() bool {
			rd, err := eng.Read(ctx, wire.ReadParams{Target: path})
			return err == nil && strings.Contains(rd.Text, "ignoring-hup")
		})
	}
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
	selectPath(t, m, "k")
	p.press("K")
	p.until(20*time.Second, "the dialog's matches", func(f string) bool { return strings.Contains(f, "3 agents match") })
	p.press("enter")
	p.until(5*time.Second, "the confirmation", func(f string) bool { return strings.Contains(f, "kill 3 agents matching k/**?") })
	p.press("y")

	// The dialog is gone at once and the kills run behind it.
	if len(m.dialogs) != 0 {
		t.Fatal("the kill dialog stayed open while the agents are killed")
	}
	start := time.Now()
	if f := plain(screen(t, m)); !strings.Contains(f, "killing k/**: 0 of 3 done") {
		t.Fatalf("no progress while the kill runs:\n%s", f)
	}
	p.until(60*time.Second, "the first kill to be counted", func(f string) bool {
		return strings.Contains(f, "killing k/**: 1 of 3 done") || strings.Contains(f, "killing k/**: 2 of 3 done")
	})
	p.until(60*time.Second, "the kill's report", func(f string) bool { return strings.Contains(f, "killed 3 of 3 matching k/**") })
	if took := time.Since(start); took < time.Second {
		t.Fatalf("the kill took %s, less than the 1s grace: the programs did not ignore SIGHUP", took)
	}
	if f := plain(screen(t, m)); strings.Contains(f, "killing") || strings.Contains(f, "deadline") {
		t.Fatalf("the status bar still shows a kill running, or an error:\n%s", f)
	}
	for _, path := range paths {
		a, err := eng.Get(ctx, path)
		if err != nil || a.State != wire.StateKilled {
			t.Fatalf("%s is %s (err %v), want killed", path, a.State, err)
		}
		if n, ok := m.idx.byPath[path]; !ok || n.agent == nil || n.agent.State != wire.StateKilled {
			t.Fatalf("the tree does not show %s killed", path)
		}
	}
}

// TestKillJobBoundsCallsAndReports: a kill of ten agents has at most eight calls in
// flight, starts the next as each answers, and its report counts what was killed, what
// had already ended and what failed (with why). Update only: no command is run.
func TestKillJobBoundsCallsAndReports(t *testing.T) {
	m := newTestModel(t, 160, 30, Options{})
	var as []wire.Agent
	for i := range 10 {
		as = append(as, wire.Agent{ID: fmt.Sprintf("id%02d", i), Path: fmt.Sprintf("fleet/a%02d", i), State: wire.StateWorking})
	}
	cmd := m.updateAction(killAction{glob: "fleet/**", agents: as})
	b, ok := cmd().(tea.BatchMsg)
	if !ok || len(b) != killParallel {
		t.Fatalf("a kill of 10 started %d calls, want %d", len(b), killParallel)
	}
	job := m.kills[m.killSeq]
	answer := func(i int, err error) tea.Cmd {
		t.Helper()
		a := as[i]
		killed := a
		killed.State = wire.StateKilled
		_, next := m.Update(killProgressMsg{job: job.id, target: a, agents: []wire.Agent{killed}, err: err})
		return next
	}
	if next := answer(0, nil); next == nil {
		t.Fatal("an answer did not start the next pending kill")
	}
	if f := plain(screen(t, m)); !strings.Contains(f, "killing fleet/**: 1 of 10 done") {
		t.Fatalf("progress after one answer:\n%s", f)
	}
	if next := answer(1, wire.Errorf(wire.CodeNotFound, "no running agent matches")); next == nil {
		t.Fatal("the second answer did not start the last pending kill")
	}
	for i := 2; i < 10; i++ {
		var err error
		if i == 5 {
			err = fmt.Errorf("host: close pane: boom")
		}
		if next := answer(i, err); next != nil {
			t.Fatalf("answer %d started another call with nothing pending", i)
		}
	}
	f := plain(screen(t, m))
	want := "killed 8 of 10 matching fleet/** (1 had already ended); failed: fleet/a05: host: close pane: boom"
	if m.status.notice != want || !m.status.isErr {
		t.Fatalf("report %q (error %v), want %q as an error", m.status.notice, m.status.isErr, want)
	}
	if strings.Contains(f, "killing") || len(m.kills) != 0 {
		t.Fatalf("the job did not end:\n%s", f)
	}
}
