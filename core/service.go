// Package core is orcr's domain and engine: agents, paths, lineage, the state machine,
// the events broker, and the Service interface that the CLI, the dashboard and the socket
// server all use. It defines the interfaces it needs (Host, Provider, Store) and imports
// none of their implementations; main.go wires them.
package core

import (
	"context"
	"io"

	"orcr/core/wire"
)

// Service is the one surface of orcr. The in-process engine (Engine) and the socket
// client (core/socket.Client) both implement it, so a caller cannot tell them apart.
type Service interface {
	Ping(ctx context.Context) (wire.PingResult, error)
	Info(ctx context.Context) (wire.InfoResult, error)

	Run(ctx context.Context, p wire.RunParams) (wire.Agent, error)
	List(ctx context.Context, p wire.ListParams) ([]wire.Agent, error)
	Get(ctx context.Context, target string) (wire.Agent, error)
	Send(ctx context.Context, p wire.SendParams) error
	// Answer answers what blocked agents wait for, by the options they show (§7).
	Answer(ctx context.Context, p wire.AnswerParams) (wire.AnswerResult, error)
	Read(ctx context.Context, p wire.ReadParams) (wire.ReadResult, error)
	Wait(ctx context.Context, p wire.WaitParams) (wire.WaitResult, error)
	Kill(ctx context.Context, p wire.KillParams) (wire.KillResult, error)
	Resize(ctx context.Context, p wire.ResizeParams) error

	// Attach prepares an attach. When the result has Argv the caller runs it; when it
	// has Stream the caller calls AttachStream with its terminal.
	Attach(ctx context.Context, p wire.AttachParams) (wire.AttachResult, error)
	// AttachStream pipes a terminal to the pane until ctx ends or the pane exits.
	AttachStream(ctx context.Context, p wire.AttachParams, in io.Reader, out io.Writer) error

	// Subscribe streams events with seq > p.After, then live ones, until ctx ends.
	// The channel is closed when the subscription ends.
	Subscribe(ctx context.Context, p wire.SubscribeParams) (<-chan wire.Event, error)

	// Hook delivers a provider hook report.
	Hook(ctx context.Context, p wire.HookParams) error

	Queue(ctx context.Context) (wire.QueueResult, error)
	Usage(ctx context.Context, p wire.UsageParams) (wire.UsageResult, error)
	Schedules(ctx context.Context) ([]wire.Schedule, error)

	// SetCaps changes admission caps at runtime; absent fields keep their value.
	SetCaps(ctx context.Context, p wire.CapsParams) (wire.QueueResult, error)
	// GC runs the lifecycle rules now (or, with DryRun, says what they would do).
	GC(ctx context.Context, p wire.GCParams) (wire.GCResult, error)
	ScheduleAdd(ctx context.Context, p wire.ScheduleAddParams) (wire.Schedule, error)
	ScheduleRemove(ctx context.Context, name string) error
	ScheduleRun(ctx context.Context, p wire.ScheduleRunParams) (wire.ScheduleRun, error)
	ScheduleRuns(ctx context.Context, name string) ([]wire.ScheduleRun, error)
}

// Caller is who is calling, as the socket server established it.
type Caller struct {
	// ClaimedID is the ORCR_ID the caller says it runs inside ("" for none). The engine
	// verifies it: the peer process must descend from that agent's pane process.
	ClaimedID string
	// PID and UID are the peer credentials of the connection.
	PID int
	UID int
	// InProcess is true for calls from the dashboard hosting the engine; nothing to verify.
	InProcess bool
}

type callerKey struct{}

// WithCaller attaches a verified caller to ctx.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller attached to ctx, if any.
func CallerFrom(ctx context.Context) (Caller, bool) {
	c, ok := ctx.Value(callerKey{}).(Caller)
	return c, ok
}
