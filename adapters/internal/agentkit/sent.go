package agentkit

import (
	"time"

	"orcr/core"
	"orcr/core/wire"
)

// Sent mirrors what an observer has told the engine already, so that a Signal carries
// only news. Each setter puts a value into the signal when it is new (not empty and not
// what was sent last) and remembers it. Start it from the agent record (NewSent): after
// a server restart the record already holds what earlier observers sent.
type Sent struct {
	usage      wire.Usage
	model      string
	session    string
	transcript string
	last       string
	limitAt    time.Time
}

// NewSent starts the mirror from what the agent's record holds.
func NewSent(a wire.Agent) Sent {
	return Sent{usage: a.Usage, model: a.Model, session: a.SessionID, transcript: a.Transcript, last: a.LastMessage}
}

// Usage sends u when it differs, by value, from the usage sent last.
func (s *Sent) Usage(sig *core.Signal, u wire.Usage) {
	if !core.UsageEqual(u, s.usage) {
		sig.Usage, s.usage = &u, u
	}
}

// Model sends the model name.
func (s *Sent) Model(sig *core.Signal, m string) {
	if m != "" && m != s.model {
		sig.Model, s.model = m, m
	}
}

// Session sends the session id.
func (s *Sent) Session(sig *core.Signal, id string) {
	if id != "" && id != s.session {
		sig.SessionID, s.session = id, id
	}
}

// Transcript sends the transcript path; it reports whether the path was new.
func (s *Sent) Transcript(sig *core.Signal, path string) bool {
	if path != "" && path != s.transcript {
		sig.Transcript, s.transcript = path, path
		return true
	}
	return false
}

// LastMessage sends the last assistant message.
func (s *Sent) LastMessage(sig *core.Signal, m string) {
	if m != "" && m != s.last {
		sig.LastMessage, s.last = m, m
	}
}

// NewLimit reports whether a usage limit hit at at has not been reported yet, and
// remembers it as reported.
func (s *Sent) NewLimit(at time.Time) bool {
	if at.Equal(s.limitAt) {
		return false
	}
	s.limitAt = at
	return true
}

// SawLimit remembers a limit hit at at as reported without asking.
func (s *Sent) SawLimit(at time.Time) { s.limitAt = at }
