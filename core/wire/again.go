package wire

// Starting an agent again from its spec: restart (same path, the old one stopped
// first) and fork (a new path beside it). The server builds the new spawn from the
// stored record — env values included, which clients only ever see redacted — so a
// client cannot build it from agent.get.

// Method names.
const (
	MethodAgentRestart = "agent.restart"
	MethodAgentFork    = "agent.fork"
)

// ForkParams name the agent to copy and the path of the copy.
type ForkParams struct {
	Target string `json:"target"`
	Path   string `json:"path"`
}

// The declarations.
var (
	AgentRestart = Declare[TargetParams, AgentResult](MethodAgentRestart, "Stop an agent if it runs, and start it again on its path with the same spec (provider, model, argv, cwd, env, prompt, limits).")
	AgentFork    = Declare[ForkParams, AgentResult](MethodAgentFork, "Start a new agent on another path with an agent's spec (provider, model, argv, cwd, env, prompt, limits).")
)
