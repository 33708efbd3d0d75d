// Package hook implements `orcr hook <provider> <event>`, the command orcr injects into
// each CLI's hook configuration (claude --settings hooks and status line, codex notify,
// the pi extension, the opencode plugin). It reads the CLI's payload, reports it to
// the orcr server as the agent named by ORCR_ID, and prints what the CLI expects on
// stdout. It must never hang or fail the CLI: the payload read and the report are
// bounded by short timeouts, and a missing server is not an error.
package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"orcr/core/wire"
)

// MaxPayload bounds the payload read from stdin.
const MaxPayload = 4 << 20

// Timeouts for the pieces of a hook run.
var (
	ReadTimeout   = 2 * time.Second
	ReportTimeout = 2 * time.Second
	ChainTimeout  = 5 * time.Second
)

// EnvStatusLineChain names the env var holding the user's own claude status line
// command (set by the claude adapter at launch).
const EnvStatusLineChain = "ORCR_CLAUDE_STATUSLINE"

// Run handles one hook invocation. env looks up environment variables (os.Getenv in
// production); report sends the hook to the server (hook.report over the socket).
// Run returns an error only for a usage mistake (no provider or event); failures to
// read or report are swallowed so the CLI is never blocked by orcr.
func Run(ctx context.Context, provider, event string, stdin io.Reader, stdout io.Writer,
	env func(string) string, report func(context.Context, wire.HookParams) error) error {
	if provider == "" || event == "" {
		return fmt.Errorf("usage: orcr hook <provider> <event>")
	}
	if env == nil {
		env = os.Getenv
	}
	payload := readPayload(ctx, stdin)
	id := env("ORCR_ID")
	if id != "" && report != nil {
		rctx, cancel := context.WithTimeout(ctx, ReportTimeout)
		_ = report(rctx, wire.HookParams{Provider: provider, Event: event, AgentID: id, Payload: asJSON(payload)})
		cancel()
	}
	if provider == "claude" && strings.EqualFold(event, "statusline") {
		statusLine(ctx, payload, stdout, env)
	}
	return nil
}

// readPayload reads stdin up to MaxPayload, giving up after ReadTimeout (a CLI that
// keeps stdin open must not hang the hook).
func readPayload(ctx context.Context, r io.Reader) []byte {
	if r == nil {
		return nil
	}
	type res struct{ b []byte }
	ch := make(chan res, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(r, MaxPayload))
		ch <- res{b}
	}()
	t := time.NewTimer(ReadTimeout)
	defer t.Stop()
	select {
	case x := <-ch:
		return bytes.TrimSpace(x.b)
	case <-t.C:
	case <-ctx.Done():
	}
	return nil
}

// asJSON keeps a valid JSON payload as it is and wraps anything else as a JSON
// string, so a malformed payload still reaches the server (which reports it).
func asJSON(b []byte) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage(`{}`)
	}
	if json.Valid(b) {
		return json.RawMessage(b)
	}
	s, _ := json.Marshal(string(b))
	return json.RawMessage(s)
}

// statusLine prints claude's status line: the user's own command's output when they
// have one (it gets the same payload on stdin), else a short orcr line.
func statusLine(ctx context.Context, payload []byte, stdout io.Writer, env func(string) string) {
	if chain := env(EnvStatusLineChain); chain != "" {
		cctx, cancel := context.WithTimeout(ctx, ChainTimeout)
		defer cancel()
		cmd := exec.CommandContext(cctx, "/bin/sh", "-c", chain)
		cmd.Stdin = bytes.NewReader(payload)
		cmd.Stdout = stdout
		cmd.WaitDelay = time.Second
		if cmd.Run() == nil {
			return
		}
	}
	var p struct {
		Model struct {
			DisplayName string `json:"display_name"`
		} `json:"model"`
		ContextWindow struct {
			UsedPercentage *float64 `json:"used_percentage"`
		} `json:"context_window"`
	}
	_ = json.Unmarshal(payload, &p)
	parts := []string{"orcr"}
	if path := env("ORCR_PATH"); path != "" {
		parts[0] = "orcr " + path
	}
	if p.Model.DisplayName != "" {
		parts = append(parts, p.Model.DisplayName)
	}
	if p.ContextWindow.UsedPercentage != nil {
		parts = append(parts, fmt.Sprintf("ctx %.0f%%", *p.ContextWindow.UsedPercentage))
	}
	fmt.Fprintln(stdout, strings.Join(parts, " · "))
}
