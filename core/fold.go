package core

import (
	"time"

	"orcr/core/wire"
)

// The state machine as pure functions. The engine applies them under its lock (one
// check-and-set per change, see Engine.changeLocked); the real-CLI test helper
// (adapters/internal/clitest) applies Fold to the same signals, so tests of the real
// programs exercise the engine's own rules.

// Change is one write of an agent record and the event that announces it.
type Change struct {
	Agent wire.Agent
	Event wire.Event
}

// Fold decides what signal s does to agent a, which has been given turns turns (an
// initial prompt or a send ending in enter). It returns at most two changes, in order:
// new facts (usage, model, session, transcript, last message) as an agent.updated
// event, then the state as an agent.state event — or agent.updated when only its
// explanation changed. A terminal agent takes no state from a signal; terminal states
// come from the host and the server (End), never from an observer.
func Fold(a wire.Agent, turns int, s *Signal, now time.Time) []Change {
	if s == nil {
		return nil
	}
	var out []Change
	if next, ok := foldFacts(a, s); ok {
		a = next
		out = append(out, Change{Agent: a, Event: wire.Event{Event: wire.EventAgentUpdated}})
	}
	if s.State == "" || s.State.Terminal() {
		return out
	}
	// The observer orders its own sources (hook over transcript over screen): it
	// knows, for instance, that a usage-limit banner on screen outranks an earlier
	// "turn finished" hook. So every state it signals is applied; the one rule of the
	// engine's own is that a settled screen after a turn means the turn is done.
	to := s.State
	if to == wire.StateIdle && turns > 0 && s.Source == "screen" {
		to = wire.StateDone
	}
	if next, ev, ok := MoveTo(a, to, s.Source, s.Reason, s.Blocked, now); ok {
		out = append(out, Change{Agent: next, Event: ev})
	}
	return out
}

// InitialTurns is the turns an agent starts with: one when it was given a prompt.
func InitialTurns(a wire.Agent) int {
	if a.Prompt != "" {
		return 1
	}
	return 0
}

// foldFacts applies the non-state fields of s; ok is false when nothing is new.
func foldFacts(a wire.Agent, s *Signal) (wire.Agent, bool) {
	changed := s.Usage != nil && !UsageEqual(*s.Usage, a.Usage) || s.Model != "" && s.Model != a.Model ||
		s.SessionID != "" && s.SessionID != a.SessionID || s.Transcript != "" && s.Transcript != a.Transcript ||
		s.LastMessage != "" && s.LastMessage != a.LastMessage
	if !changed {
		return a, false
	}
	if s.Usage != nil {
		a.Usage = *s.Usage
	}
	if s.Model != "" {
		a.Model = s.Model
	}
	if s.SessionID != "" {
		a.SessionID = s.SessionID
	}
	if s.Transcript != "" {
		a.Transcript = s.Transcript
	}
	if s.LastMessage != "" {
		a.LastMessage = s.LastMessage
	}
	return a, true
}

// UsageEqual compares usage by value: two readings of the same cost are equal even
// when their CostUSD pointers differ.
func UsageEqual(x, y wire.Usage) bool {
	if (x.CostUSD == nil) != (y.CostUSD == nil) || x.CostUSD != nil && *x.CostUSD != *y.CostUSD {
		return false
	}
	x.CostUSD, y.CostUSD = nil, nil
	return x == y
}

// MoveTo is the rule for a move to a non-terminal state: a terminal agent stays
// where it is, and the same state with the same source and reason is no change. A new
// state is an agent.state event; the same state newly explained (another signal
// confirmed it, or the reason changed) is an agent.updated event, so a subscriber's
// "why" stays current too. Leaving the queue clears the queue position.
func MoveTo(a wire.Agent, to wire.State, source, reason string, blocked *wire.Blocked, now time.Time) (wire.Agent, wire.Event, bool) {
	from := a.State
	if to != wire.StateBlocked {
		blocked = nil
	}
	// A prompt's options completed by a later reading (a hook reports the prompt, the
	// screen then shows its menu) is news about the same state.
	if from.Terminal() || from == to && a.StateReason == reason && a.StateSource == source && SameBlocked(a.Blocked, blocked) {
		return a, wire.Event{}, false
	}
	ev := wire.Event{Event: wire.EventAgentUpdated}
	if from != to {
		ev = wire.Event{Event: wire.EventAgentState, From: from, To: to}
		a.StateAt = now
	}
	a.State, a.StateSource, a.StateReason, a.Blocked = to, source, reason, blocked
	if to != wire.StateQueued {
		a.QueuePos = 0
	}
	return a, ev, true
}

// SameBlocked compares two descriptions of what an agent waits for by value.
func SameBlocked(x, y *wire.Blocked) bool {
	if x == nil || y == nil {
		return x == y
	}
	if x.Kind != y.Kind || x.Detail != y.Detail || x.Question != y.Question || x.Text != y.Text ||
		len(x.Options) != len(y.Options) || (x.ResetsAt == nil) != (y.ResetsAt == nil) ||
		x.ResetsAt != nil && !x.ResetsAt.Equal(*y.ResetsAt) {
		return false
	}
	for i := range x.Options {
		if x.Options[i] != y.Options[i] {
			return false
		}
	}
	return true
}

// End is the rule for a terminal state: it happens once. The record keeps its last
// screen and, when known, the exit code.
func End(a wire.Agent, to wire.State, source, reason string, code *int, now time.Time) (wire.Agent, wire.Event, bool) {
	from := a.State
	if from.Terminal() {
		return a, wire.Event{}, false
	}
	a.State, a.StateSource, a.StateReason, a.StateAt = to, source, reason, now
	a.Blocked = nil
	a.EndedAt = &now
	if code != nil {
		c := *code
		a.ExitCode = &c
	}
	a.QueuePos = 0
	return a, wire.Event{Event: wire.EventAgentState, From: from, To: to}, true
}
