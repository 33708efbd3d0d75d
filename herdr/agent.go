package herdr

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"time"

	"orcr/core/wire"
)

// AgentState is herdr's own detection for the program in a pane (reference §2.4):
// herdr identifies agents by the pane's foreground processes, so an argv pane
// running claude under orcr's wrapper is detected like any other.
type AgentState struct {
	Agent  string // detected kind ("claude"); empty for a plain pane
	Status string // idle, done, working, blocked or unknown
}

// Settled reports idle or done: the agent finished its turn and waits for input.
func (a AgentState) Settled() bool { return a.Status == "idle" || a.Status == "done" }

// AgentStatus reads herdr's agent status of pane (pane.get).
func (h *Host) AgentStatus(ctx context.Context, pane string) (AgentState, error) {
	var res struct {
		Pane struct {
			Agent       string `json:"agent"`
			AgentStatus string `json:"agent_status"`
		} `json:"pane"`
	}
	if err := h.c.call(ctx, "pane.get", map[string]any{"pane_id": pane}, &res); err != nil {
		return AgentState{}, err
	}
	return AgentState{Agent: res.Pane.Agent, Status: res.Pane.AgentStatus}, nil
}

// WaitAgent blocks in herdr's agent.wait until the agent in pane reaches one of
// until (default idle, done, blocked). ctx's deadline becomes timeout_ms; without one
// it waits until ctx ends (closing the connection cancels the wait in herdr). A
// pane with no detected agent is agent_not_found; one that dies mid-wait is
// agent_not_running.
func (h *Host) WaitAgent(ctx context.Context, pane string, until ...string) (AgentState, error) {
	params := map[string]any{"target": pane}
	if len(until) > 0 {
		params["until"] = until
	}
	if dl, ok := ctx.Deadline(); ok {
		// Leave herdr a moment to answer `timeout` before the connection deadline.
		params["timeout_ms"] = max(time.Until(dl).Milliseconds()-100, 1)
	}
	var res struct {
		Agent struct {
			Agent       string `json:"agent"`
			AgentStatus string `json:"agent_status"`
		} `json:"agent"`
	}
	if err := h.c.wait(ctx, "agent.wait", params, &res); err != nil {
		return AgentState{}, err
	}
	return AgentState{Agent: res.Agent.Agent, Status: res.Agent.AgentStatus}, nil
}

// herdrTargets are the integration targets herdr can install (reference §2.12).
var herdrTargets = []string{"pi", "omp", "claude", "codex", "copilot", "devin", "droid", "kimi",
	"opencode", "kilo", "hermes", "qodercli", "cursor", "mastracode", "antigravity_cli", "grok"}

// IntegrationTarget maps an orcr provider to herdr's integration target; ok is
// false for providers herdr has no integration for (shell).
func IntegrationTarget(provider string) (target string, ok bool) {
	if slices.Contains(herdrTargets, provider) {
		return provider, true
	}
	return "", false
}

// RequireIntegration fails fast, with the exact fix command, when provider has a
// herdr integration that is not installed (or outdated). The error is a
// wire.CodeMissingProgram error, which the CLI turns into exit status 2.
func (h *Host) RequireIntegration(ctx context.Context, provider string) error {
	target, ok := IntegrationTarget(provider)
	if !ok {
		return nil
	}
	installed, err := h.IntegrationInstalled(ctx, target)
	if err != nil {
		return err
	}
	if !installed {
		return wire.Errorf(wire.CodeMissingProgram, "herdr's %s integration is not installed (or outdated); run: %s",
			provider, IntegrationFix(target))
	}
	return nil
}

// IntegrationFix is the command that installs herdr's integration for provider.
func IntegrationFix(provider string) string {
	return "herdr integration install " + provider
}

// IntegrationInstalled reports whether `herdr integration status` lists provider as
// current. herdr has no socket method for this; the status is read from the hook
// files by the CLI (reference §2.12). "outdated" counts as not installed, since
// the same install command fixes it.
func (h *Host) IntegrationInstalled(ctx context.Context, provider string) (bool, error) {
	if h.opts.Bin == "" {
		return false, fmt.Errorf("herdr integration status: %w: no herdr binary configured", ErrNotInstalled)
	}
	cmd := exec.CommandContext(ctx, h.opts.Bin, "integration", "status")
	cmd.Env = serverEnv(h.opts.Env)
	cmd.WaitDelay = 2 * time.Second // a server it starts cannot hold the answer by holding stdout
	out, err := cmd.Output()
	if err != nil && !errors.Is(err, exec.ErrWaitDelay) {
		return false, fmt.Errorf("herdr integration status: %w", err)
	}
	return parseIntegrationStatus(string(out), provider), nil
}

// parseIntegrationStatus finds "<provider>: current …" in herdr's status output.
func parseIntegrationStatus(out, provider string) bool {
	for _, line := range strings.Split(out, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && strings.EqualFold(strings.TrimSpace(name), provider) {
			return strings.HasPrefix(strings.TrimSpace(rest), "current")
		}
	}
	return false
}
