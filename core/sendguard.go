package core

import (
	"context"
	"fmt"
	"strings"
	"time"

	"orcr/core/wire"
)

// Text is never typed into a prompt that waits for a choice (DESIGN §7). Claude's
// permission menu takes a digit as its answer and Enter as "yes" on the option under
// the cursor, so a steering message followed by Enter approves what the prompt asks —
// `rm -rf build` ran that way — and the message itself is lost. agent.send is the one
// way text and Enter reach a pane (the CLI, the dashboard, and every feature through
// the kernel go through it), so the rule lives there: plain text, or a bare Enter, to
// an agent that waits for a choice is refused with agent_blocked and nothing is typed.
// Explicit keys (--keys) stay the sender's deliberate choice and are sent.
//
// The check is made twice: on the record (cheap, before any wait) and on the screen
// right before each keystroke that could land in a prompt, through the provider's own
// prompt rules — a prompt can appear between the state read and the keys (a tool call
// the model made while the message was on its way).

// WaitsForChoice reports whether an agent in state st blocked on b waits for a choice,
// so text sent to it is refused (the dashboard opens the answer dialog instead). Every
// block does but a usage limit that shows nothing to pick: "continue" after its reset
// is how such an agent goes on.
func WaitsForChoice(st wire.State, b *wire.Blocked) bool {
	if st != wire.StateBlocked {
		return false
	}
	return b == nil || b.Kind != wire.BlockedLimit || len(b.Options) > 0
}

// typesIntoPane reports whether a send puts text or an Enter of its own into the pane
// (as opposed to explicit keys only).
func typesIntoPane(p wire.SendParams) bool { return p.Text != "" || p.Enter }

// blockedRefusal is the agent_blocked error for the agent at path waiting on b.
func blockedRefusal(path string, b *wire.Blocked) error {
	what := "a prompt"
	if b != nil {
		what = "a " + b.Kind + " prompt"
		if b.Kind == wire.BlockedDialog {
			what = "a dialog"
		}
		if d := strings.TrimSpace(b.Detail); d != "" {
			what += " (" + d + ")"
		}
	}
	answer := answerCommand(path, b)
	msg := fmt.Sprintf("%s waits for an answer to %s; nothing was typed, since text or Enter there would pick an option. "+
		"Answer it first: %s", path, what, answer)
	if b != nil && len(b.Options) > 0 {
		msg += "\nIt offers:\n" + wire.FormatOptions(b.Options)
	}
	data := map[string]any{"answer": answer}
	if b != nil {
		data["blocked"] = b
	}
	return &wire.Error{Code: wire.CodeAgentBlocked, Message: msg, Data: data}
}

// answerCommand is the command that answers b, with the text along where the prompt
// takes one (claude's "No" amended with what to do instead is the steer's own place).
func answerCommand(path string, b *wire.Blocked) string {
	base := "orcr agent answer " + path
	if b == nil || len(b.Options) == 0 {
		if b != nil && b.Kind == wire.BlockedQuestion {
			return base + ` --text "…"`
		}
		return base + " --allow | --deny | --option N (see them with: orcr agent get " + path + ")"
	}
	for _, o := range b.Options {
		if o.Meaning == wire.MeaningDeny && o.Text {
			return base + ` --deny --text "…" (or --allow, --option N)`
		}
	}
	return base + " --allow | --deny | --option N"
}

// refuseIfBlocked is the record's half of the rule: it refuses when the agent is
// recorded blocked on a choice.
func refuseIfBlocked(e *Engine, rt *agentRT) error {
	e.mu.Lock()
	st, b, path := rt.a.State, rt.a.Blocked, rt.a.Path
	e.mu.Unlock()
	if WaitsForChoice(st, b) {
		return blockedRefusal(path, b)
	}
	return nil
}

// refuseIfPrompt is the screen's half, made right before a keystroke: it reads the
// pane through the provider's prompt rules (the ones agent.answer uses) and refuses
// when it shows a prompt, or when the record says blocked meanwhile. A provider that
// reads no prompts leaves the record's word.
func refuseIfPrompt(ctx context.Context, e *Engine, rt *agentRT, pane string) error {
	if err := refuseIfBlocked(e, rt); err != nil {
		return err
	}
	if _, ok := rt.observer().(Prompter); !ok {
		return nil
	}
	shown, _, err := e.promptNow(ctx, rt, pane)
	if err != nil {
		return err
	}
	if shown != nil {
		e.mu.Lock()
		path, rec := rt.a.Path, rt.a.Blocked
		e.mu.Unlock()
		if rec != nil && SamePrompt(rec, shown) && rec.Detail != "" && shown.Detail == "" {
			shown.Detail = rec.Detail // a hook knew the tool call the screen only shows in part
		}
		e.log.Info("send: refused, the screen shows a prompt", "agent", path, "kind", shown.Kind, "detail", shown.Detail)
		return blockedRefusal(path, shown)
	}
	return nil
}

// Sender is what SendWhenFree needs: the kernel's agent.get and agent.send.
type Sender interface {
	Get(ctx context.Context, target string) (wire.Agent, error)
	Send(ctx context.Context, p wire.SendParams) error
}

// SendWhenFree sends p, and when the agent waits on a prompt (agent_blocked) waits
// until it no longer does — the user answered it — and sends again, until ctx ends.
// It is for a feature's message that must not be lost and has no turn of its own to
// wait for (a role's wrap-up, a budget's last word): nothing is typed into the prompt
// meanwhile. It polls, backing off to a few seconds: a prompt waits for a person.
func SendWhenFree(ctx context.Context, k Sender, p wire.SendParams) error {
	delay := 200 * time.Millisecond
	for {
		err := k.Send(ctx, p)
		if wire.CodeOf(err) != wire.CodeAgentBlocked {
			return err
		}
		for {
			if err := sleepCtx(ctx, delay); err != nil {
				return fmt.Errorf("waiting for the prompt to be answered: %w", err)
			}
			delay = min(2*delay, 5*time.Second)
			a, err := k.Get(ctx, p.Target)
			if err != nil {
				return err
			}
			// An ended agent ends the wait: the next send says it is not running.
			if a.State.Terminal() || !WaitsForChoice(a.State, a.Blocked) {
				break
			}
		}
	}
}
