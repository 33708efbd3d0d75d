package roles

import (
	"context"

	"orcr/core/wire"
)

// say types a message into an agent's TUI and submits it. The kernel's send makes sure
// the CLI takes it (core/submit.go): claude 2.1.328 takes a long text and an Enter
// right after it as one paste and keeps the Enter as a newline, so for claude the text
// goes as a bracketed paste, Enter once it shows, and again if no turn starts.
func (s *Service) say(ctx context.Context, id, text string) error {
	return s.k.Send(ctx, wire.SendParams{Target: id, Text: text, Enter: true})
}
