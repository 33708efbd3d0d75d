package wire

// Renaming an agent: its record moves to another path. The id, the pane and the
// history stay; only the name changes.

// MethodAgentRename is the method name.
const MethodAgentRename = "agent.rename"

// CodeHasChildren: a live agent with children cannot be renamed (their paths sit under
// its path, and they name it as their parent).
const CodeHasChildren = "has_children"

// RenameParams name the agent and its new path.
type RenameParams struct {
	Target string `json:"target"`
	Path   string `json:"path"`
}

// AgentRename is the declaration.
var AgentRename = Declare[RenameParams, AgentResult](MethodAgentRename, "Move an agent to another path (same id, pane and history); refused for a path a live agent holds, and for a live agent with children.")
