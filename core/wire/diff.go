package wire

// agent.diff: what an agent changed in its working tree, for the dashboard's diff view
// (D) and `orcr agent diff`.

// MethodAgentDiff names agent.diff.
const MethodAgentDiff = "agent.diff"

// DefaultDiffBytes is how much of a diff agent.diff returns when MaxBytes is 0.
const DefaultDiffBytes = 1 << 20

// DiffParams asks for the diff of an agent's working tree against its base.
type DiffParams struct {
	Target string `json:"target"`
	// MaxBytes bounds the diff's text (0: DefaultDiffBytes); past it Truncated is set.
	MaxBytes int `json:"maxBytes,omitempty" range:"0,16777216"`
}

// DiffResult answers agent.diff: `git diff BASE` in Dir (staged and unstaged changes
// against the commit the agent's branch started from), then the untracked files.
type DiffResult struct {
	Dir string `json:"dir"`
	// Base is the commit diffed against: for an agent with its own worktree the
	// merge base of its branch and the main worktree's HEAD, else HEAD. BaseName says
	// what it is ("main", "HEAD").
	Base      string   `json:"base"`
	BaseName  string   `json:"baseName"`
	Text      string   `json:"text"`
	Untracked []string `json:"untracked" maxItems:"100000"`
	Truncated bool     `json:"truncated"`
}

// AgentDiff declares agent.diff.
var AgentDiff = Declare[DiffParams, DiffResult](MethodAgentDiff, "The git diff of an agent's working tree against its base (bounded).", ReadOnly)
