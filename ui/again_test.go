package ui

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

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
	})
	if err != nil {
		t.Fatal(err)
	}
	return ip
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
		for _, k := range []string{"F", "ctrl+r"} {
			name := map[string]string{"F": "fork", "ctrl+r": "restart"}[k]
			t.Run(fmt.Sprintf("%s_%dx%d", name, sz[0], sz[1]), func(t *testing.T) {
				m := newTestModel(t, sz[0], sz[1], Options{})
				selectPath(t, m, "demo/a")
				press(m, k)
				golden.RequireEqual(t, screen(t, m))
			})
		}
	}
}
