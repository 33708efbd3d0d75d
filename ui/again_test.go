package ui

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/charmbracelet/x/exp/golden"

	"orcr/core/socket"
	"orcr/core/wire"
)

// againServer serves agent.restart and agent.fork in-process, recording what it was
// asked; every other method is unknown.
type againServer struct {
	mu        sync.Mutex
	restarted []string
	forked    []wire.ForkParams
	renamed   []wire.RenameParams
}

func (s *againServer) transport(t testing.TB) wire.Transport {
	ip, err := socket.NewInProcess([]wire.Handler{
		wire.Handle(wire.AgentRestart, func(_ context.Context, p *wire.TargetParams) (wire.AgentResult, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.restarted = append(s.restarted, p.Target)
			a := agent("r"+p.Target, "demo/a", wire.StateStarting, "codex", "gpt-5-codex", 0, 0, nil)
			a.UpdatedAt = t0
			return wire.AgentResult{Agent: a}, nil
		}),
		wire.Handle(wire.AgentFork, func(_ context.Context, p *wire.ForkParams) (wire.AgentResult, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.forked = append(s.forked, *p)
			if p.Path == "demo/b" {
				return wire.AgentResult{}, wire.Errorf(wire.CodePathTaken, "demo/b is idle; kill it first")
			}
			a := agent("f0001", p.Path, wire.StateStarting, "codex", "gpt-5-codex", 0, 0, nil)
			a.UpdatedAt = t0
			return wire.AgentResult{Agent: a}, nil
		}),
		wire.Handle(wire.AgentRename, func(_ context.Context, p *wire.RenameParams) (wire.AgentResult, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.renamed = append(s.renamed, *p)
			if p.Path == "demo/b" {
				return wire.AgentResult{}, wire.Errorf(wire.CodePathTaken, "demo/b is idle; pick another path or kill it first")
			}
			a := agent(p.Target, p.Path, wire.StateWorking, "codex", "gpt-5-codex", 0, 0, nil)
			a.UpdatedAt = t0.Add(time.Hour)
			return wire.AgentResult{Agent: a}, nil
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	return ip
}

// TestRenameKey: R opens the rename dialog with the agent's path to edit; enter moves it
// through agent.rename and the tree shows it at its new path, still selected; a path the
// server refuses keeps the error in the bar.
func TestRenameKey(t *testing.T) {
	srv := &againServer{}
	m := newTestModel(t, 120, 40, Options{})
	m.svc = srv.transport(t)
	selectPath(t, m, "demo/a")
	pressSettle(t, m, "R")
	d, ok := m.dialogs[0].(*againDialog)
	if !ok || !d.rename || d.in.Value() != "demo/a" {
		t.Fatalf("R opened %#v", m.dialogs)
	}
	if s := plain(screen(t, m)); !strings.Contains(s, "move demo/a (same id, pane and history) to:") {
		t.Fatalf("rename dialog:\n%s", s)
	}
	for range len("a") {
		press(m, "backspace")
	}
	typeText(m, "renamed")
	pressSettle(t, m, "enter")
	if len(srv.renamed) != 1 || srv.renamed[0] != (wire.RenameParams{Target: "0001", Path: "demo/renamed"}) {
		t.Fatalf("renamed %+v", srv.renamed)
	}
	if len(m.dialogs) != 0 || m.selectedID() != "0001" || !strings.Contains(m.status.notice, "renamed demo/a → demo/renamed") {
		t.Fatalf("after the rename: dialogs %d, selected %q, notice %q", len(m.dialogs), m.selectedID(), m.status.notice)
	}
	if n := m.idx.byID["0001"]; n == nil || n.path != "demo/renamed" {
		t.Fatalf("the tree does not show 0001 at demo/renamed")
	}
	press(m, "R")
	for range len("demo/renamed") {
		press(m, "backspace")
	}
	typeText(m, "demo/b")
	pressSettle(t, m, "enter")
	if !strings.Contains(m.status.notice, "rename demo/renamed: demo/b is idle") || !m.status.isErr {
		t.Fatalf("refused rename notice %q", m.status.notice)
	}
}

// TestForkKey: F on an agent opens the fork dialog with a free path suggested; enter
// forks it there (the server builds the spec) and selects the new agent; a path the
// server refuses keeps the error in the bar; esc cancels without a call.
func TestForkKey(t *testing.T) {
	srv := &againServer{}
	m := newTestModel(t, 120, 40, Options{})
	m.svc = srv.transport(t)
	selectPath(t, m, "demo/a")
	pressSettle(t, m, "F")
	d, ok := m.dialogs[0].(*againDialog)
	if !ok || !d.fork || d.in.Value() != "demo/a-2" {
		t.Fatalf("F opened %#v", m.dialogs)
	}
	pressSettle(t, m, "enter")
	if len(srv.forked) != 1 || srv.forked[0] != (wire.ForkParams{Target: "0001", Path: "demo/a-2"}) {
		t.Fatalf("forked %+v", srv.forked)
	}
	if len(m.dialogs) != 0 || m.selectedID() != "f0001" || !strings.Contains(m.status.notice, "forked demo/a → demo/a-2") {
		t.Fatalf("after the fork: dialogs %d, selected %q, notice %q", len(m.dialogs), m.selectedID(), m.status.notice)
	}
	// The suggestion skips taken paths.
	selectPath(t, m, "demo/a")
	press(m, "F")
	if got := m.dialogs[0].(*againDialog).in.Value(); got != "demo/a-3" {
		t.Fatalf("second suggestion %q", got)
	}
	for range len("demo/a-3") {
		press(m, "backspace")
	}
	typeText(m, "demo/b")
	pressSettle(t, m, "enter")
	if !strings.Contains(m.status.notice, "fork demo/a: demo/b is idle") || !m.status.isErr {
		t.Fatalf("refused fork notice %q", m.status.notice)
	}
	press(m, "F", "esc")
	if len(m.dialogs) != 0 || len(srv.forked) != 2 {
		t.Fatalf("esc: dialogs %d forks %d", len(m.dialogs), len(srv.forked))
	}
}

// TestRestartKey: ctrl+r asks first, saying the running agent is stopped; y (or enter)
// restarts it through agent.restart; esc does nothing.
func TestRestartKey(t *testing.T) {
	srv := &againServer{}
	m := newTestModel(t, 120, 40, Options{})
	m.svc = srv.transport(t)
	selectPath(t, m, "demo/a")
	press(m, "ctrl+r")
	s := plain(screen(t, m))
	if !strings.Contains(s, "Restart demo/a?") || !strings.Contains(s, "It is working: it is stopped") {
		t.Fatalf("restart dialog:\n%s", s)
	}
	press(m, "esc")
	if len(m.dialogs) != 0 || len(srv.restarted) != 0 {
		t.Fatal("esc restarted")
	}
	press(m, "ctrl+r")
	pressSettle(t, m, "y")
	if len(srv.restarted) != 1 || srv.restarted[0] != "0001" || !strings.Contains(m.status.notice, "restarted demo/a") {
		t.Fatalf("restarted %v, notice %q", srv.restarted, m.status.notice)
	}
	if m.selectedID() != "r0001" {
		t.Fatalf("selected %q after the restart", m.selectedID())
	}
}

func TestGoldenAgain(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {200, 50}} {
		for _, k := range []string{"F", "ctrl+r", "R"} {
			name := map[string]string{"F": "fork", "ctrl+r": "restart", "R": "rename"}[k]
			t.Run(fmt.Sprintf("%s_%dx%d", name, sz[0], sz[1]), func(t *testing.T) {
				m := newTestModel(t, sz[0], sz[1], Options{})
				selectPath(t, m, "demo/a")
				press(m, k)
				golden.RequireEqual(t, screen(t, m))
			})
		}
	}
}
