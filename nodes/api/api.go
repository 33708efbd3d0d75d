// Package api holds the nodes feature's wire types and method declarations (DESIGN
// §14): the machines orcr reaches over SSH and runs agents on. cli and ui import it as
// nodeapi.
package api

import (
	"time"

	"orcr/core/wire"
)

// Node states, as `orcr node ls` shows them.
const (
	StateUp          = "up"          // linked: the node's server answers
	StateConnecting  = "connecting"  // the first link is being made (or made again)
	StateUnreachable = "unreachable" // the link was lost; its agents are unreachable, not lost
	StateDraining    = "draining"    // linked, but takes no new agents (node drain)
)

// Node is one machine agents may run on: how to reach it (its registry entry) and what
// the link last saw of it.
type Node struct {
	Name string `json:"name"`
	// SSH is how the user named the machine: user@host[:port] or a Host alias of
	// ~/.ssh/config.
	SSH string `json:"ssh"`
	// User, Addr and Port are what SSH resolved to (the alias's HostName, User, Port).
	User string `json:"user"`
	Addr string `json:"addr"`
	Port int    `json:"port"`
	// IdentityFile is the key the link signs with (besides ssh-agent's keys); ""
	// takes the alias's IdentityFile, then ssh's default keys.
	IdentityFile string `json:"identityFile,omitempty"`
	// MaxAgents is this node's cap (0: no cap of its own; the global caps still hold).
	MaxAgents int `json:"maxAgents"`
	// Accounts are the accounts whose login exists on the node; Labels what roles and
	// runs may ask for.
	Accounts []string `json:"accounts,omitempty"`
	Labels   []string `json:"labels,omitempty"`
	// AcceptNewHostKey: a host key never seen is accepted once and kept in orcr's own
	// known_hosts; a changed one is still refused.
	AcceptNewHostKey bool `json:"acceptNewHostKey,omitempty"`
	// Draining: no new agents are placed here; the ones running finish.
	Draining bool `json:"draining,omitempty"`
	// Source is "config" for a [[nodes]] entry of config.toml, "cli" for node add.
	Source  string    `json:"source"`
	AddedAt time.Time `json:"addedAt"`

	// What the link knows.
	State    string     `json:"state"`
	Error    string     `json:"error,omitempty"` // why the last link failed
	Agents   int        `json:"agents"`          // live agents on the node
	FreeMB   int        `json:"freeMb"`
	TotalMB  int        `json:"totalMb"`
	Version  string     `json:"version,omitempty"` // the node's orcr version
	OS       string     `json:"os,omitempty"`
	Arch     string     `json:"arch,omitempty"`
	LastSeen *time.Time `json:"lastSeen,omitempty"`
	// While the node is unreachable: how many attempts to link again failed in a row,
	// and when the next one is made (the backoff doubles to its cap, 15 s).
	Attempts int        `json:"attempts,omitempty"`
	RetryAt  *time.Time `json:"retryAt,omitempty"`
	// Gap says what the last return of the link could not replay: the node's events
	// the coordinator missed were no longer kept there (its gc.retain pruned them, or
	// its store is new), so its agents' records were re-read instead.
	Gap string `json:"gap,omitempty"`
	// Warning says what does not work on a node that is up: its sshd refused the
	// forward its agents call orcr through ("agents cannot call orcr: …"), so agents
	// that must (a run's) are not placed there.
	Warning string `json:"warning,omitempty"`
	// Landlock is the Landlock the node's server confines agents with, as its last
	// hello said (nil: not heard yet, or its orcr does not say). Placement puts an
	// agent that asks for a sandbox only on a node whose ABI is at least 1.
	Landlock *Landlock `json:"landlock,omitempty"`
}

// Landlock is the Landlock a server confines agents with (DESIGN §16): the ABI it
// applies (its kernel's, capped by what its orcr applies and ORCR_SANDBOX_MAX_ABI), or
// 0 and why it confines nothing.
type Landlock struct {
	ABI   int    `json:"abi"`
	Error string `json:"error,omitempty"`
}

// AddParams registers a node (node.add).
type AddParams struct {
	Name             string   `json:"name"`
	SSH              string   `json:"ssh"`
	IdentityFile     string   `json:"identityFile,omitempty"`
	MaxAgents        int      `json:"maxAgents,omitempty" range:"0,100000"`
	AcceptNewHostKey bool     `json:"acceptNewHostKey,omitempty"`
	Accounts         []string `json:"accounts,omitempty" maxItems:"256"`
	Labels           []string `json:"labels,omitempty" maxItems:"256"`
}

// NameParams names one node.
type NameParams struct {
	Name string `json:"name"`
}

// RmParams removes a node. A node with live agents is refused unless Force, which
// marks them lost (their panes on the node are left as they are).
type RmParams struct {
	Name  string `json:"name"`
	Force bool   `json:"force,omitempty"`
}

// RmResult says what node.rm did: with Force, the agents it marked lost.
type RmResult struct {
	Lost []string `json:"lost"` // their paths
}

// DrainParams drains a node, or with Undo takes it back into placement.
type DrainParams struct {
	Name string `json:"name"`
	Undo bool   `json:"undo,omitempty"`
}

// Result wraps one node.
type Result struct {
	Node Node `json:"node"`
}

// ListResult answers node.ls, by name.
type ListResult struct {
	Nodes []Node `json:"nodes"`
}

// HelloResult is what a server says of itself to a coordinator that links to it: the
// version handshake and the facts placement needs.
type HelloResult struct {
	// Version is the orcr version (`orcr version`); Binary the SHA-256 of the running
	// binary, which decides whether the coordinator sends its own.
	Version string `json:"version"`
	Binary  string `json:"binary"`
	Wire    int    `json:"wire"`
	OS      string `json:"os"`
	Arch    string `json:"arch"`
	FreeMB  int    `json:"freeMb"`
	TotalMB int    `json:"totalMb"`
	Agents  int    `json:"agents"` // live (not terminal) agents
	// RSS is the mean resident memory in MB of this server's live agents (each its
	// pane's process tree), per provider: what placement reserves for the next one.
	RSS     map[string]int `json:"rssMb,omitempty"`
	LastSeq uint64         `json:"lastSeq"`
	Home    string         `json:"home"`
	PID     int            `json:"pid"`
	// Landlock is what the server confines a sandboxed agent with (nil from an orcr
	// older than this field).
	Landlock *Landlock `json:"landlock,omitempty"`
}

// ProviderFact is one provider's program on a server, as its Detect found it.
type ProviderFact struct {
	Name    string `json:"name"`
	Found   bool   `json:"found"`
	Version string `json:"version,omitempty"`
	Fix     string `json:"fix,omitempty"`
}

// FactsResult is what a server has for agents (node.facts): its providers and its
// accounts (provider/label).
type FactsResult struct {
	Providers []ProviderFact `json:"providers"`
	Accounts  []string       `json:"accounts"`
}

// CheckResult is a node as `orcr doctor` checks it (node.check): its link (ssh
// reachable, tmux, a writable home: a link is up only with all three), its orcr
// against this one, and what it has. Problems are the checks that failed, each with
// its fix.
type CheckResult struct {
	Node       Node         `json:"node"`
	SameBinary bool         `json:"sameBinary"`
	Facts      *FactsResult `json:"facts,omitempty"`
	Problems   []string     `json:"problems"`
}

// Method names.
const (
	MethodAdd   = "node.add"
	MethodList  = "node.ls"
	MethodShow  = "node.show"
	MethodDrain = "node.drain"
	MethodRm    = "node.rm"
	MethodHello = "node.hello"
	MethodFacts = "node.facts"
	MethodCheck = "node.check"
)

// Events of nodes: Data has "node" and, for a state change, "from", "to" and "error";
// for an events gap, "from" and "to" (the node's seqs not replayed, "to" 0 when not
// known) and "why".
const (
	EventNodeState = "node.state"
	EventNodeGap   = "node.events_gap"
)

var _ = wire.DeclareEvents(EventNodeState, EventNodeGap)

// The API, one declaration per method.
var (
	Add   = wire.Declare[AddParams, Result](MethodAdd, "Register a machine reached over SSH that agents may run on.")
	List  = wire.Declare[wire.Empty, ListResult](MethodList, "The nodes: how each is reached, its state, agents, memory and version.")
	Show  = wire.Declare[NameParams, Result](MethodShow, "One node.")
	Drain = wire.Declare[DrainParams, Result](MethodDrain, "Stop placing agents on a node (undo: place them again).")
	Rm    = wire.Declare[RmParams, RmResult](MethodRm, "Forget a node. One with live agents is refused with their count unless force, which marks them lost.")
	Facts = wire.Declare[wire.Empty, FactsResult](MethodFacts, "This server's providers (found, version) and accounts: what orcr doctor says of a node.")
	Check = wire.Declare[NameParams, CheckResult](MethodCheck, "Check a node as orcr doctor does: ssh reachable, tmux there, its orcr version, its providers and accounts.")
	Hello = wire.Declare[wire.Empty, HelloResult](MethodHello, "This server's version, binary, platform and free memory: what a coordinator links by.")
)
