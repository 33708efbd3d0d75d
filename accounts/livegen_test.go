package accounts

import (
	"testing"

	"orcr/core/wire"
)

// TestAgentOnNoAccountChangesNoDecision: a shell agent going live and ending leaves the
// decision generation alone (it would wake admission and the resume loop once per
// spawn for nothing); a claude agent on an account moves it both times.
func TestAgentOnNoAccountChangesNoDecision(t *testing.T) {
	s := newTestService(t, "", "w")
	s.mu.Lock()
	defer s.mu.Unlock()
	note := func(a wire.Agent) uint64 {
		g := s.gen
		s.noteAgentLocked(a)
		return s.gen - g
	}
	sh := wire.Agent{ID: "a1", Path: "loop/a1", Provider: "shell", State: wire.StateQueued}
	for _, st := range []wire.State{wire.StateQueued, wire.StateStarting, wire.StateWorking, wire.StateIdle, wire.StateExited} {
		sh.State = st
		if d := note(sh); d != 0 {
			t.Fatalf("a shell agent becoming %s moved the generation by %d", st, d)
		}
	}
	cl := wire.Agent{ID: "a2", Path: "loop/a2", Provider: "claude", Account: "w", State: wire.StateWorking}
	if note(cl) == 0 {
		t.Fatal("a claude agent going live on account w left the generation")
	}
	cl.State = wire.StateExited
	if note(cl) == 0 {
		t.Fatal("a claude agent on account w ending left the generation")
	}
}
