package tools

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"orcr/core/wire"
	mcpapi "orcr/mcp/api"
)

// MaxArguments bounds one tool call's arguments: what one socket request line may carry
// (wire.MaxLine), less room for the envelope. A bigger call is answered with a tool
// error naming the bound, before anything reaches the orcr server.
const MaxArguments = wire.MaxLine - 4<<10

// waitSlice is how long one agent.wait call of agent_wait lasts: between slices the
// tool reports progress and looks at its cancellation, so a client that cancels or goes
// away leaves at most one slice running on the orcr server.
var waitSlice = 5 * time.Second

// Options configure a Server.
type Options struct {
	// Transport reaches the orcr server (the socket client dialled with the caller's
	// ORCR_ID, or an in-process transport in tests).
	Transport wire.Transport
	// Scope is the scope asked for ("" for the default).
	Scope string
	// Version is orcr's version, told to MCP clients.
	Version string
	// Logger logs to a file (never to stdout, which is the protocol).
	Logger *slog.Logger
}

// Server is one MCP session's server: the granted session and the MCP server built on it.
type Server struct {
	// life ends when the session does (stdin closed, ctx of Serve done): every call in
	// flight ends with it, so a client that goes away mid-wait ends the process.
	life    context.Context
	end     context.CancelFunc
	t       wire.Transport
	session mcpapi.SessionResult
	srv     *sdk.Server
}

// New opens the session with the orcr server (mcp.session: the caller is verified
// and the scope granted or refused) and builds the MCP server with its tools.
func New(ctx context.Context, o Options) (*Server, error) {
	if o.Transport == nil {
		return nil, errors.New("orcr mcp needs a connection to the orcr server")
	}
	sess, err := wire.Call(ctx, o.Transport, mcpapi.Session, mcpapi.SessionParams{Scope: o.Scope})
	if err != nil {
		return nil, err
	}
	s := &Server{t: o.Transport, session: sess}
	s.life, s.end = context.WithCancel(context.Background())
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	who := "no agent (a root caller)"
	if sess.Caller != nil {
		who = "agent " + sess.Caller.Path
	}
	s.srv = sdk.NewServer(&sdk.Implementation{Name: "orcr", Title: "orcr", Version: o.Version}, &sdk.ServerOptions{
		Logger: logger,
		Instructions: fmt.Sprintf("orcr runs coding agents in panes it owns. You are %s; this session's scope is %s (%s).",
			who, sess.Scope, scopeWords(sess.Scope)),
	})
	for _, tl := range table {
		spec, ok := wire.Lookup(tl.method)
		if !ok {
			return nil, fmt.Errorf("tool %s: method %s is not declared", tl.name, tl.method)
		}
		ro := tl.kind == reads
		s.srv.AddTool(&sdk.Tool{
			Name:        tl.name,
			Description: tl.desc,
			InputSchema: wire.ParamsSchema(spec),
			Annotations: &sdk.ToolAnnotations{ReadOnlyHint: ro, DestructiveHint: destructive(tl), OpenWorldHint: new(bool)},
		}, s.handler(tl, spec))
	}
	return s, nil
}

func destructive(tl tool) *bool {
	d := tl.name == "agent_kill"
	return &d
}

func scopeWords(scope string) string {
	switch scope {
	case mcpapi.ScopeSelf:
		return "you act only on your own subtree of agents and read only your lineage"
	case mcpapi.ScopeRead:
		return "you see every agent and change nothing"
	}
	return "you act on every agent"
}

// Session is the granted session.
func (s *Server) Session() mcpapi.SessionResult { return s.session }

// MCP is the MCP server (tests connect it to an in-memory transport).
func (s *Server) MCP() *sdk.Server { return s.srv }

// Serve runs the MCP protocol over r and w (stdin and stdout) until the client closes
// them or ctx ends.
func (s *Server) Serve(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error {
	defer s.end()
	stop := context.AfterFunc(ctx, s.end)
	defer stop()
	g := newGuard(r, w, s.end)
	defer r.Close()
	err := s.srv.Run(ctx, &sdk.IOTransport{Reader: g.pr, Writer: g.out})
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// handler is a tool's handler: the size bound, the method's strict decoder, the
// scope, the call, the answer as JSON text.
func (s *Server) handler(tl tool, spec wire.MethodSpec) sdk.ToolHandler {
	decode := wire.Decoder(spec)
	resultType := spec.Result
	return func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		defer context.AfterFunc(s.life, cancel)()
		raw := req.Params.Arguments
		if len(raw) > MaxArguments {
			return toolError(wire.Errorf(wire.CodeInvalidParams, "%s: the arguments are %d bytes; the limit is %d (one orcr request)",
				tl.name, len(raw), MaxArguments)), nil
		}
		p, err := decode(raw)
		if err != nil {
			return toolError(rename(err, spec.Name, tl.name)), nil
		}
		p, err = s.allow(ctx, tl, p)
		if err != nil {
			return toolError(err), nil
		}
		var out any
		if tl.name == "agent_wait" {
			out, err = s.wait(ctx, req, p.(*wire.WaitParams))
		} else {
			res := reflect.New(resultType)
			err = s.t.Call(ctx, spec.Name, p, res.Interface())
			out = res.Interface()
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return toolError(err), nil
		}
		out, err = s.filter(tl, out)
		if err != nil {
			return toolError(err), nil
		}
		b, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("%s: encode the answer: %w", tl.name, err)
		}
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: string(b)}}}, nil
	}
}

// rename makes the decoder's error speak of the tool, not the socket method.
func rename(err error, method, tool string) error {
	var we *wire.Error
	if errors.As(err, &we) {
		msg := strings.ReplaceAll(we.Message, "; see `orcr api schema`", "; see the tool's input schema")
		msg = strings.ReplaceAll(msg, method+":", tool+":")
		return &wire.Error{Code: we.Code, Message: msg}
	}
	return err
}

// toolError is an error the model sees (and can correct): its stable code and message.
func toolError(err error) *sdk.CallToolResult {
	text := err.Error()
	var we *wire.Error
	if errors.As(err, &we) {
		text = we.Code + ": " + we.Message
	}
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: text}}}
}

// wait is agent_wait: agent.wait in slices, progress between them, until the agents
// reach the state, the timeout runs out or the call is cancelled.
func (s *Server) wait(ctx context.Context, req *sdk.CallToolRequest, p *wire.WaitParams) (wire.WaitResult, error) {
	start := time.Now()
	var deadline time.Time
	if p.TimeoutSeconds > 0 {
		deadline = start.Add(time.Duration(p.TimeoutSeconds) * time.Second)
	}
	token := req.Params.GetProgressToken()
	for n := 1; ; n++ {
		slice := waitSlice
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				left = 0
			}
			slice = min(slice, left)
		}
		q := *p
		q.TimeoutSeconds = max(1, int((slice+time.Second-1)/time.Second))
		r, err := wire.Call(ctx, s.t, wire.AgentWait, q)
		if err != nil {
			return r, err
		}
		if !r.TimedOut || (!deadline.IsZero() && !time.Now().Before(deadline)) {
			return r, nil
		}
		if err := ctx.Err(); err != nil {
			return r, err
		}
		if token != nil && req.Session != nil {
			waiting := 0
			for _, a := range r.Agents {
				if !reached(a, p.Until) {
					waiting++
				}
			}
			msg := fmt.Sprintf("waiting %s for %d of %d agent(s) matching %s to be %s", time.Since(start).Round(time.Second),
				waiting, len(r.Agents), p.Glob, orDefault(p.Until, "settled"))
			np := &sdk.ProgressNotificationParams{ProgressToken: token, Progress: float64(n), Message: msg}
			if p.TimeoutSeconds > 0 {
				np.Progress = time.Since(start).Seconds()
				np.Total = float64(p.TimeoutSeconds)
			}
			_ = req.Session.NotifyProgress(ctx, np)
		}
	}
}

// reached is a rough reading of whether a reached until, for the progress message only
// (the server's agent.wait decides).
func reached(a wire.Agent, until string) bool {
	switch until {
	case "done":
		return a.State == wire.StateDone
	case "idle":
		return a.State == wire.StateIdle
	case "blocked":
		return a.State == wire.StateBlocked
	case "exited":
		return !a.State.Live()
	}
	return !a.State.Live() || a.State == wire.StateDone || a.State == wire.StateBlocked || a.State == wire.StateIdle
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}
