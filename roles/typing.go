package roles

import (
	"context"

	"orcr/core"
	"orcr/core/wire"
)

// say types a message into an agent's TUI and submits it. The kernel's send makes sure
// the CLI takes it (core/submit.go): claude 2.1.328 takes a long text and an Enter
// right after it as one paste and keeps the Enter as a newline, so for claude the text
// goes as a bracketed paste, Enter once it shows, and again if no turn starts. An agent
// waiting on a prompt gets it once the prompt is answered (core.SendWhenFree): typed
// into the prompt, the wrap-up would answer it and be lost.
func (s *Service) say(ctx context.Context, id, text string) error {
	return core.SendWhenFree(ctx, s.k, wire.SendParams{Target: id, Text: text, Enter: true})
}
