package wire

import (
	"encoding/json"
	"errors"
	"fmt"
)

// MaxLine is the longest request line the server accepts (1 MiB, newline excluded).
const MaxLine = 1 << 20

// MaxAnswer is the largest answer line the server writes (64 MiB). A bigger one is
// replaced by an answer_too_big error with the request's id: a list of 11,000 records is
// about 12 MiB, so only a request that should page or filter meets it, and no client
// needs to hold more than this for one call.
const MaxAnswer = 64 << 20

// Request is one line from a client.
type Request struct {
	ID     string          `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
	// Caller is the agent the client claims to run inside (its ORCR_ID). The server
	// verifies the claim against the peer's process tree before trusting it.
	Caller string `json:"caller,omitempty"`
	// Version is the protocol version the client speaks. A server that speaks another
	// refuses the request with version_mismatch; 0 (a hand-written client) is not checked.
	Version int `json:"version,omitempty"`
}

// Response answers exactly one request. Exactly one of Result and Error is set.
type Response struct {
	ID     string          `json:"id"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *Error          `json:"error,omitempty"`
}

// Methods of the socket API. Every one has a params and a result type in the schema.
const (
	MethodPing            = "server.ping"
	MethodInfo            = "server.info"
	MethodAgentRun        = "agent.run"
	MethodAgentList       = "agent.list"
	MethodAgentGet        = "agent.get"
	MethodAgentSend       = "agent.send"
	MethodAgentRead       = "agent.read"
	MethodAgentWait       = "agent.wait"
	MethodAgentKill       = "agent.kill"
	MethodAgentAttach     = "agent.attach"
	MethodAgentResize     = "agent.resize"
	MethodEventsSubscribe = "events.subscribe"
	MethodHookReport      = "hook.report"
)

// ---- params and results ----

// Empty is the params or result of methods that carry nothing.
type Empty struct{}

// PingResult answers server.ping.
type PingResult struct {
	Pong    bool `json:"pong"`
	Version int  `json:"version"`
}

// InfoResult describes the running server.
type InfoResult struct {
	Version   int    `json:"version"`
	PID       int    `json:"pid"`
	Home      string `json:"home"`
	Socket    string `json:"socket"`
	Host      string `json:"host"`
	HostWhy   string `json:"hostWhy"`
	StartedAt string `json:"startedAt"`
	Agents    int    `json:"agents"`
	LastSeq   uint64 `json:"lastSeq"`
	// Providers are the providers this server runs (agent.run's provider), sorted:
	// what a client offers instead of a list of its own.
	Providers []string `json:"providers"`
	// Limits are the socket's bounds in force (set by the socket server, absent in-process).
	Limits *ServerLimits `json:"limits,omitempty"`
}

// ServerLimits are the socket server's bounds on clients and its open connections.
type ServerLimits struct {
	MaxConnections int `json:"maxConnections"`
	MaxInFlight    int `json:"maxInFlight"`    // requests answered at once per connection
	MaxUnread      int `json:"maxUnreadBytes"` // unread answer bytes per connection
	Connections    int `json:"connections"`    // open now
}

// RunParams spawns an agent (agent.run).
type RunParams struct {
	Path     string            `json:"path"`
	Provider string            `json:"provider,omitempty"` // default "shell"
	Model    string            `json:"model,omitempty"`
	Argv     []string          `json:"argv,omitempty" maxItems:"4096"`
	Cwd      string            `json:"cwd,omitempty"`
	Env      map[string]string `json:"env,omitempty" maxItems:"1024"`
	Prompt   string            `json:"prompt,omitempty"`
	Priority int               `json:"priority,omitempty" range:"-1000000,1000000"`
	Keep     bool              `json:"keep,omitempty"`
	Worktree string            `json:"worktree,omitempty"`
	// Role names a role template ($XDG_CONFIG_HOME/orcr/roles/NAME.toml); Vars fill
	// its prompt's {{var}}s. Fields given here win over the role's.
	Role string            `json:"role,omitempty"`
	Vars map[string]string `json:"vars,omitempty" maxItems:"1024"`
	// SystemPrompt is appended to the provider's system prompt.
	SystemPrompt       string  `json:"systemPrompt,omitempty"`
	MaxTurns           int     `json:"maxTurns,omitempty" range:"0,100000"`
	SoftTimeoutSeconds int     `json:"softTimeoutSeconds,omitempty" range:"0,2592000"`
	HardTimeoutSeconds int     `json:"hardTimeoutSeconds,omitempty" range:"0,2592000"`
	BudgetUSD          float64 `json:"budgetUsd,omitempty" range:"0,1000000"`
	// BudgetAction is what reaching BudgetUSD does: "stop" (the default) or "hold".
	BudgetAction string `json:"budgetAction,omitempty"`
	// Account pins the agent to one account of its provider (a label); admission
	// then waits for that account instead of picking another.
	Account string `json:"account,omitempty"`
	// Sandbox confines the agent with Landlock (§16): mode "on" or "off", and what
	// widens the policy. Absent: the role's or the run's choice, else unconfined.
	Sandbox *Sandbox `json:"sandbox,omitempty"`
	Cols    int      `json:"cols,omitempty" range:"0,1000"` // 0: the host's default
	Rows    int      `json:"rows,omitempty" range:"0,500"`
	// Node pins the agent to a node (DESIGN §14); "" lets placement choose.
	Node string `json:"node,omitempty"`
	// ID is the id the agent is recorded under: a coordinator placing an agent on a
	// node passes its own, so the agent keeps one id everywhere. "" picks a new one.
	ID       string `json:"id,omitempty"`
	Identity string `json:"identity,omitempty"`
	// Spawn bounds what the agent may itself spawn from its pane (SpawnPolicy).
	Spawn *SpawnPolicy `json:"spawn,omitempty"`
	// MCP gives the agent orcr's MCP server at this scope (self, read or act; DESIGN
	// §17) through its provider's own config, and caps every MCP session of it and of
	// its descendants there. With a role's mcp, the narrower of the two; a cap the
	// spawn carries already is never widened.
	MCP string `json:"mcp,omitempty"`
}

// AgentResult wraps one agent.
type AgentResult struct {
	Agent Agent `json:"agent"`
}

// ListParams filters agent.list. An empty glob selects everything.
type ListParams struct {
	Glob string `json:"glob,omitempty"`
	// All includes every record, also ones superseded by a newer agent on the same
	// path; by default only the newest record per path is listed.
	All bool `json:"all,omitempty"`
	// States keeps only agents in one of these states (empty: every state), before
	// paging, so `orcr agent ls --state blocked` over thousands of agents is one
	// short answer.
	States []State `json:"states,omitempty" maxItems:"32"`
	// Full includes each agent's lastScreen, which is left out by default to keep
	// listings of thousands of agents small (agent.get and agent.read return it).
	Full bool `json:"full,omitempty"`
	// Table asks for display rows instead of records (like kubectl's server-side
	// printing): a terminal client then decodes a few short strings per agent.
	Table bool `json:"table,omitempty"`
	// Limit asks for one page of at most this many agents (0: all of them); the
	// result's next is then the after of the following page. The socket client pages
	// by itself, so `orcr agent ls` over 100,000 records is many bounded answers.
	Limit int `json:"limit,omitempty" range:"0,1000000"`
	// After is the next of the previous page: the list goes on after that agent, in
	// the list's order (path, then age). Agents added before it since are not listed.
	After string `json:"after,omitempty"`
	// Node keeps only the agents on that node ("local": this machine's).
	Node string `json:"node,omitempty"`
}

// ListResult answers agent.list.
type ListResult struct {
	Agents []Agent `json:"agents"`
	Table  *Table  `json:"table"` // set when ListParams.Table
	// Next is set when a Limit left agents out: pass it as After for the next page.
	Next string `json:"next,omitempty"`
}

// Table is rows for display: the columns of `orcr agent ls`.
type Table struct {
	Columns []string   `json:"columns"`
	Rows    [][]string `json:"rows"`
}

// TargetParams names one agent: an id, an id prefix, or a path.
type TargetParams struct {
	Target string `json:"target"`
}

// SendParams types text and/or named keys into an agent's pane.
type SendParams struct {
	Target string   `json:"target"`
	Text   string   `json:"text,omitempty"`
	Enter  bool     `json:"enter,omitempty"`
	Keys   []string `json:"keys,omitempty" maxItems:"4096"`
}

// ReadParams reads an agent's screen or transcript.
type ReadParams struct {
	Target      string `json:"target"`
	Lines       int    `json:"lines,omitempty" range:"0,100000"` // last N lines of screen+scrollback
	LastMessage bool   `json:"lastMessage,omitempty"`
	Transcript  bool   `json:"transcript,omitempty"`
	// ANSI asks for the screen with its styles: each line carries SGR sequences for its
	// colours and attributes (tmux capture-pane -e; the pty host renders its cells; herdr
	// reads with format ansi). Scrollback lines may come plain where a host keeps them as
	// text (pty), and the last screen of an ended agent is always plain. A client must
	// sanitise the text before drawing it: it is the agent's output.
	ANSI bool `json:"ansi,omitempty"`
}

// ReadResult answers agent.read.
type ReadResult struct {
	Text string `json:"text"`
	Cols int    `json:"cols"`
	Rows int    `json:"rows"`
	// Live is false when the text is the last screen kept after the pane closed.
	Live bool `json:"live"`
}

// WaitParams waits until every agent matching Glob reaches Until.
// Until is one of done|idle|blocked|exited|settled (default settled).
type WaitParams struct {
	Glob           string `json:"glob"`
	Until          string `json:"until,omitempty"`
	TimeoutSeconds int    `json:"timeoutSeconds,omitempty" range:"0,31622400"` // 0: no timeout
}

// WaitResult answers agent.wait.
type WaitResult struct {
	Agents   []Agent `json:"agents"`
	TimedOut bool    `json:"timedOut"`
}

// KillParams stops every agent matching Glob (or one target).
type KillParams struct {
	Glob   string `json:"glob"`
	DryRun bool   `json:"dryRun,omitempty"`
}

// KillResult lists what was (or would be) killed.
type KillResult struct {
	Agents []Agent `json:"agents"`
	DryRun bool    `json:"dryRun"`
}

// AttachParams starts an attach on a dedicated connection.
type AttachParams struct {
	Target string `json:"target"`
	Cols   int    `json:"cols,omitempty" range:"0,1000"`
	Rows   int    `json:"rows,omitempty" range:"0,500"`
}

// AttachResult tells the client how to attach. When Argv is set the client runs that
// native command (tmux attach, herdr …). When Stream is true the connection turns into a
// stream of AttachFrame lines in both directions (embedded pty host).
type AttachResult struct {
	Argv   []string `json:"argv,omitempty"`
	Stream bool     `json:"stream"`
	Agent  Agent    `json:"agent"`
}

// AttachFrame is one line of an attach stream. Data is raw terminal bytes (base64 in JSON).
type AttachFrame struct {
	Data   []byte `json:"data,omitempty"`
	Cols   int    `json:"cols,omitempty" range:"0,1000"`
	Rows   int    `json:"rows,omitempty" range:"0,500"`
	Closed bool   `json:"closed,omitempty"` // the pane ended
}

// ResizeParams resizes an agent's pane.
type ResizeParams struct {
	Target string `json:"target"`
	Cols   int    `json:"cols" range:"1,1000"`
	Rows   int    `json:"rows" range:"1,500"`
}

// SubscribeParams opens an event stream on a dedicated connection. Stored events with
// seq > After are replayed first, then live ones follow. Paths filters by agent glob.
type SubscribeParams struct {
	After uint64   `json:"after,omitempty"`
	Paths []string `json:"paths,omitempty" maxItems:"256"`
	// Transient asks for transient events (agent.screen) too.
	Transient bool `json:"transient,omitempty"`
}

// SubscribeResult acknowledges a subscription; events follow as lines.
type SubscribeResult struct {
	Subscribed bool   `json:"subscribed"`
	LastSeq    uint64 `json:"lastSeq"`
}

// HookParams carries a provider hook (orcr hook <provider> <event>) to the server.
type HookParams struct {
	Provider string          `json:"provider"`
	Event    string          `json:"event"`
	AgentID  string          `json:"agentId"`
	Payload  json.RawMessage `json:"payload,omitempty"`
}

// ---- errors ----

// Stable error codes. Clients match on these, never on messages.
const (
	CodeBadRequest      = "bad_request"      // malformed JSON or envelope
	CodeLineTooLong     = "line_too_long"    // request over MaxLine
	CodeUnknownMethod   = "unknown_method"   // no such method
	CodeInvalidParams   = "invalid_params"   // missing or wrong-typed params
	CodeInvalidPath     = "invalid_path"     // path does not follow the rules
	CodeInvalidGlob     = "invalid_glob"     // glob does not parse
	CodePathTaken       = "path_taken"       // a live agent already has this path
	CodeNotFound        = "not_found"        // target matches nothing
	CodeAmbiguous       = "ambiguous"        // id prefix matches several agents
	CodeNotRunning      = "not_running"      // agent has no live pane
	CodeUnknownProvider = "unknown_provider" // no adapter by that name
	CodeMissingProgram  = "missing_program"  // host or provider binary missing (CLI exit 2)
	CodeCallerRefused   = "caller_refused"   // claimed ORCR_ID does not match the peer
	CodePermission      = "permission"       // other uid
	CodeHostError       = "host_error"       // the host failed the operation
	CodeTimeout         = "timeout"
	CodeVersionMismatch = "version_mismatch"
	CodeInternal        = "internal"
	CodeUnavailable     = "unavailable" // server not running
	CodeShuttingDown    = "shutting_down"
	// CodeStoreUnavailable: the store cannot write (disk full, read-only); reads still work
	// and writes resume by themselves.
	CodeStoreUnavailable = "store_unavailable"
	// CodeTooManyConnections: the server has its maximum of connections open.
	CodeTooManyConnections = "too_many_connections"
	// CodeAnswerTooBig: the answer is over MaxAnswer; page (limit/after) or filter.
	CodeAnswerTooBig = "answer_too_big"
)

// Error is an API error: a stable code and a message that says what to do.
type Error struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Data    map[string]any `json:"data,omitempty"`
}

func (e *Error) Error() string { return e.Message }

// Is matches errors by code, so errors.Is(err, wire.ErrNotFound) works across the wire.
func (e *Error) Is(target error) bool {
	var t *Error
	if errors.As(target, &t) {
		return t.Code == e.Code && (t.Message == "" || t.Message == e.Message)
	}
	return false
}

// Errorf builds an *Error with a code.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Sentinels for errors.Is; they carry only a code.
var (
	ErrNotFound         = &Error{Code: CodeNotFound}
	ErrPathTaken        = &Error{Code: CodePathTaken}
	ErrInvalidPath      = &Error{Code: CodeInvalidPath}
	ErrInvalidGlob      = &Error{Code: CodeInvalidGlob}
	ErrNotRunning       = &Error{Code: CodeNotRunning}
	ErrMissingProgram   = &Error{Code: CodeMissingProgram}
	ErrTimeout          = &Error{Code: CodeTimeout}
	ErrUnavailable      = &Error{Code: CodeUnavailable}
	ErrCallerRefused    = &Error{Code: CodeCallerRefused}
	ErrUnknownProvider  = &Error{Code: CodeUnknownProvider}
	ErrInvalidParams    = &Error{Code: CodeInvalidParams}
	ErrStoreUnavailable = &Error{Code: CodeStoreUnavailable}
)

// CodeOf returns the API code of err, or CodeInternal.
func CodeOf(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// AsError converts any error to an *Error for the wire.
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		if e.Message == "" {
			return &Error{Code: e.Code, Message: err.Error()}
		}
		return &Error{Code: e.Code, Message: err.Error(), Data: e.Data}
	}
	return &Error{Code: CodeInternal, Message: err.Error()}
}
