// Package api declares the web gateway's socket methods (DESIGN §15): its tokens,
// its pairing codes and its status. The types and declarations only, so the CLI and
// the dashboard import them without the gateway.
package api

import (
	"context"
	"time"

	"orcr/core/wire"
)

// Method names.
const (
	MethodTokenNew    = "web.token.new"
	MethodTokenList   = "web.token.list"
	MethodTokenRemove = "web.token.remove"
	MethodPair        = "web.pair"
	MethodStatus      = "web.status"
	MethodAgents      = "web.agents"
)

// CodeUnauthorized: the request carries no credential the gateway knows (HTTP 401).
const CodeUnauthorized = "unauthorized"

// Scopes a token may have.
const (
	// ScopeRead calls only the methods declared read-only (wire.ReadOnly) and reads
	// the events and screens.
	ScopeRead = "read"
	// ScopeAct calls every method the gateway serves.
	ScopeAct = "act"
)

// Kinds of credential.
const (
	KindToken   = "token"   // made by `orcr web token new`, sent as a bearer token
	KindSession = "session" // a browser paired by `orcr web pair`, held in a cookie
)

// TokenNewParams makes a token.
type TokenNewParams struct {
	// Name names the token (for ls and rm): letters, digits, '.', '-', '_', at most
	// 64; "" picks one.
	Name  string `json:"name,omitempty"`
	Scope string `json:"scope"` // read | act
	// TTLSeconds is how long the token is good for (0: until removed).
	TTLSeconds int64 `json:"ttlSeconds,omitempty" range:"0,315360000"`
}

// Token is a credential as it is listed: never its secret.
type Token struct {
	Name      string     `json:"name"`
	Kind      string     `json:"kind"` // token | session
	Scope     string     `json:"scope"`
	CreatedAt time.Time  `json:"createdAt"`
	ExpiresAt *time.Time `json:"expiresAt"`
	// LastUsed is when it last authenticated a request (kept to the minute).
	LastUsed *time.Time `json:"lastUsed"`
	// Device is a browser session's user agent, shortened.
	Device string `json:"device,omitempty"`
	// Push says a paired browser has a Web Push subscription (web.status only).
	Push bool `json:"push,omitempty"`
}

// TokenNewResult is the token made and its secret, shown this once.
type TokenNewResult struct {
	Token  Token  `json:"token"`
	Secret string `json:"secret"`
}

// TokenListResult lists the tokens and paired browsers, in name order.
type TokenListResult struct {
	Tokens []Token `json:"tokens"`
}

// TokenNameParams names one token or paired browser.
type TokenNameParams struct {
	Name string `json:"name"`
}

// PairParams asks for a pairing code.
type PairParams struct {
	Scope string `json:"scope,omitempty"` // the paired browser's scope; default act
	// TTLSeconds is the browser session's lifetime (0: 30 days).
	TTLSeconds int64 `json:"ttlSeconds,omitempty" range:"0,315360000"`
}

// PairResult is a one-time pairing URL.
type PairResult struct {
	URL       string    `json:"url"`
	ExpiresAt time.Time `json:"expiresAt"`
	// Listen is the address the gateway listens on; Warning says what is wrong with
	// the URL (a wildcard address, no gateway running).
	Listen  string `json:"listen"`
	Warning string `json:"warning,omitempty"`
}

// StatusResult is the gateway as the dashboard and doctor show it.
type StatusResult struct {
	// Listen is the address served ("" when the gateway is off), URL how to reach it.
	Listen string `json:"listen"`
	URL    string `json:"url"`
	// Error says why the gateway is not serving although asked to.
	Error string `json:"error,omitempty"`
	// Devices are the paired browsers; Tokens the count of bearer tokens.
	Devices []Token `json:"devices"`
	Tokens  int     `json:"tokens"`
	// Clients is the number of event streams open now.
	Clients int `json:"clients"`
}

// AgentsParams selects the agents web.agents answers with (every agent without a
// glob), the newest record per path as agent.list.
type AgentsParams struct {
	Glob string `json:"glob,omitempty"`
}

// AgentRow is an agent as the page's tree and its "needs you" cards draw it: what
// agent.list says of it minus everything the page does not show (argv, env,
// prompt, usage, hooks, …: a record is ~1 KB, a row ~100 bytes). A blocked agent's
// prompt comes without its full text (a plan's markdown; plan.get has it).
type AgentRow struct {
	ID      string        `json:"id"`
	Path    string        `json:"path"`
	State   wire.State    `json:"state"`
	Blocked *wire.Blocked `json:"blocked"`
}

// AgentsResult is the agents in agent.list's order (natural path order).
type AgentsResult struct {
	Agents []AgentRow `json:"agents"`
}

// The declarations.
var (
	TokenNew    = wire.Declare[TokenNewParams, TokenNewResult](MethodTokenNew, "Make a web gateway token (read or act scope, optional TTL); its secret is in this answer only.")
	TokenList   = wire.Declare[wire.Empty, TokenListResult](MethodTokenList, "The web gateway's tokens and paired browsers (never their secrets).", wire.ReadOnly)
	TokenRemove = wire.Declare[TokenNameParams, wire.Empty](MethodTokenRemove, "Revoke a web gateway token or paired browser by name.")
	Pair        = wire.Declare[PairParams, PairResult](MethodPair, "A one-time, short-lived URL that logs a browser in to the web gateway.")
	Status      = wire.Declare[wire.Empty, StatusResult](MethodStatus, "The web gateway: its address, paired browsers, open event streams.", wire.ReadOnly)
	Agents      = wire.Declare[AgentsParams, AgentsResult](MethodAgents, "The agents as the web page draws them: id, path, state and what a blocked one waits for (a tenth of agent.list's bytes).", wire.ReadOnly)
)

// Local are the methods the gateway refuses over HTTP: a credential is minted from
// the machine's own user only, never by a holder of another credential.
var Local = map[string]bool{MethodTokenNew: true, MethodPair: true}

type listenKey struct{}

// WithListen carries the address `--http ADDR` asked for to the server the command
// starts (it wins over the config's [http] listen).
func WithListen(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, listenKey{}, addr)
}

// ListenFrom returns the address WithListen set, if any.
func ListenFrom(ctx context.Context) (string, bool) {
	a, ok := ctx.Value(listenKey{}).(string)
	return a, ok && a != ""
}
