// Package api is the sandbox feature's socket surface (DESIGN §16): the policy an
// agent is confined by, what the launcher applied, and what the agent's screen showed
// refused; and the Landlock ABI the server's kernel offers.
package api

import (
	"time"

	"orcr/core/wire"
)

// Method names.
const (
	MethodExplain = "sandbox.explain"
	MethodStatus  = "sandbox.status"
)

// SandboxExplainParams names one agent.
type SandboxExplainParams struct {
	Target string `json:"target"`
}

// SandboxExplanation is an agent's confinement as it stands.
type SandboxExplanation struct {
	// Mode is the agent's sandbox mode ("on", "off", "" for none asked).
	Mode string `json:"mode"`
	// Policy is what the server wrote for its last launch (nil before one).
	Policy *SandboxPolicy `json:"policy,omitempty"`
	// Applied is what the launcher applied in the pane (nil before it ran).
	Applied *SandboxApplied `json:"applied,omitempty"`
	// Refused are lines of the agent's screen that show an access refused
	// (EACCES, "Permission denied", "Operation not permitted"), newest last: what the
	// agent itself saw, not a kernel audit log.
	Refused []string `json:"refused,omitempty"`
	// LastDenial is the last access Landlock refused the agent, from the kernel's
	// audit log (nil when none was logged or the log cannot be read).
	LastDenial *SandboxDenial `json:"lastDenial,omitempty"`
	// Audit says why denials are not read from the audit log ("" when they are).
	Audit string `json:"audit,omitempty"`
}

// SandboxDenial is one access Landlock refused, as the kernel's audit logged it.
type SandboxDenial struct {
	When time.Time `json:"when"`
	// Access is what was refused ("fs.write_file", "net.connect_tcp", …).
	Access string `json:"access"`
	// Object is the path, or address:port, refused.
	Object string `json:"object"`
	PID    int    `json:"pid"`
	Comm   string `json:"comm"`
}

// SandboxPolicy is the policy file's content.
type SandboxPolicy struct {
	RW     []string `json:"rw"`
	ROX    []string `json:"rox"`
	RO     []string `json:"ro"`
	Dev    []string `json:"dev"`
	Ports  []int    `json:"ports"`
	Socket string   `json:"socket"`
	MaxABI int      `json:"maxAbi,omitempty"`
	// Notes say what was changed or refused while building it: a grant resolved
	// through a symlink, a grant refused, the provider's own sandbox switched off.
	Notes []string `json:"notes,omitempty"`
}

// SandboxApplied is the launcher's report.
type SandboxApplied struct {
	KernelABI int      `json:"kernelAbi"`
	ABI       int      `json:"abi"`
	Net       bool     `json:"net"`
	Scoped    bool     `json:"scoped"`
	Warnings  []string `json:"warnings,omitempty"`
	PID       int      `json:"pid"`
	// InProcess: the server confined the agent from a thread of its own (pty host),
	// without the launcher process.
	InProcess bool `json:"inProcess,omitempty"`
}

// SandboxState is the server's kernel's Landlock.
type SandboxState struct {
	ABI int `json:"abi"` // 0: none
	// Error says why there is none.
	Error string `json:"error,omitempty"`
	// MaxABI is the cap the server applies (ORCR_SANDBOX_MAX_ABI), 0 for none.
	MaxABI int `json:"maxAbi,omitempty"`
}

var (
	SandboxExplain = wire.Declare[SandboxExplainParams, SandboxExplanation](MethodExplain,
		"An agent's confinement: the policy in force, what the launcher applied, and what its screen showed refused.")
	SandboxStatus = wire.Declare[wire.Empty, SandboxState](MethodStatus, "The Landlock ABI of the server's kernel, or why there is none.")
)
