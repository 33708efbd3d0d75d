package roles

import (
	"context"
	"strings"
	"time"

	"orcr/core/wire"
)

// poll checks cond every 100 ms until it holds or d passes.
func poll(ctx context.Context, d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// say types a message into an agent's TUI and submits it. A long text typed in one
// burst is taken for a paste by claude and codex, and an Enter in the same burst
// becomes part of it (seen with claude 2.1.328: the wrap-up sat unsent in the input),
// so the Enter goes once the text shows on the screen, and once more if the turn
// did not start.
func (s *Service) say(ctx context.Context, id, text string) error {
	if err := s.k.Send(ctx, wire.SendParams{Target: id, Text: text}); err != nil {
		return err
	}
	tail := text
	if len(tail) > 16 {
		tail = tail[len(tail)-16:]
	}
	onScreen := func() bool {
		r, err := s.k.Read(ctx, wire.ReadParams{Target: id})
		return err == nil && strings.Contains(strings.Join(strings.Fields(r.Text), " "), strings.Join(strings.Fields(tail), " "))
	}
	poll(ctx, 3*time.Second, onScreen)
	var before time.Time
	if a, err := s.k.Get(ctx, id); err == nil {
		before = a.StateAt
	}
	for try := 0; try < 2; try++ {
		// The first Enter counts as the agent's turn (Enter); a second one is a retry.
		p := wire.SendParams{Target: id, Enter: true}
		if try > 0 {
			p = wire.SendParams{Target: id, Keys: []string{"enter"}}
		}
		if err := s.k.Send(ctx, p); err != nil {
			return err
		}
		started := poll(ctx, 3*time.Second, func() bool {
			a, err := s.k.Get(ctx, id)
			// A scripted turn can start and end between two looks: a newer state
			// instant counts as started too.
			return err != nil || a.State != wire.StateDone && a.State != wire.StateIdle || a.StateAt.After(before)
		})
		if started {
			break
		}
	}
	return nil
}
