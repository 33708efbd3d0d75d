// Package core is orcr's agent kernel: agent records, paths, globs, lineage, the state
// machine and its one signal fold, admission (with the Gate interface features plug
// into), the events broker and GC, and the Service interface that the CLI, the
// dashboard and the socket server all use. It defines the interfaces it needs (Host,
// Provider, Store, Gate) and imports none of their implementations, and none of the
// feature packages (schedule, …) built beside it; the daemon wires them.
package core

import (
	"context"
	"io"

	"orcr/core/wire"
)

// Service is the one surface of orcr. The server's composition (Composed: the
// kernel's services plus each feature's) and the socket client (core/socket.Client)
// both implement it, so a caller cannot tell them apart. It is made of one small
// interface per feature: a new feature adds an interface here (and a field to
// Composed) instead of widening an existing one.
type Service interface {
	ServerService
	AgentService
	EventService
	QueueService
	UsageService
	GCService
	ScheduleService
	RoleService
	AccountService
	PlanService
	CatalogService
	ListenerService
	RunService
}

// KernelService is what the kernel (Engine) serves itself: everything of Service but
// the features built beside it.
type KernelService interface {
	ServerService
	AgentService
	EventService
	QueueService
	UsageService
	GCService
}

// Composed is the server's Service: the kernel plus each feature's service.
type Composed struct {
	KernelService
	ScheduleService
	RoleService
	AccountService
	PlanService
	CatalogService
	ListenerService
	RunService
}

var _ Service = Composed{}

// ServerService describes the server itself.
type ServerService interface {
	Ping(ctx context.Context) (wire.PingResult, error)
	Info(ctx context.Context) (wire.InfoResult, error)
}

// AgentService spawns, finds, drives and stops agents.
type AgentService interface {
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

	// Resume brings an ended or hibernated agent back through its provider's own
	// resume of its session (§12).
	Resume(ctx context.Context, p wire.ResumeParams) (wire.Agent, error)

	// Hook delivers a provider hook report.
	Hook(ctx context.Context, p wire.HookParams) error
}

// EventService streams the event log.
type EventService interface {
	// Subscribe streams events with seq > p.After, then live ones, until ctx ends.
	// The channel is closed when the subscription ends.
	Subscribe(ctx context.Context, p wire.SubscribeParams) (<-chan wire.Event, error)
}

// QueueService shows and tunes admission.
type QueueService interface {
	Queue(ctx context.Context) (wire.QueueResult, error)
	// SetCaps changes admission caps at runtime; absent fields keep their value.
	SetCaps(ctx context.Context, p wire.CapsParams) (wire.QueueResult, error)
}

// UsageService reports tokens, cost and limit readings.
type UsageService interface {
	Usage(ctx context.Context, p wire.UsageParams) (wire.UsageResult, error)
}

// GCService runs lifecycle collection.
type GCService interface {
	// GC runs the lifecycle rules now (or, with DryRun, says what they would do).
	GC(ctx context.Context, p wire.GCParams) (wire.GCResult, error)
}

// ScheduleService manages durable schedules (package schedule implements it).
type ScheduleService interface {
	Schedules(ctx context.Context) ([]wire.Schedule, error)
	ScheduleAdd(ctx context.Context, p wire.ScheduleAddParams) (wire.Schedule, error)
	ScheduleRemove(ctx context.Context, name string) error
	ScheduleRun(ctx context.Context, p wire.ScheduleRunParams) (wire.ScheduleRun, error)
	ScheduleRuns(ctx context.Context, name string) ([]wire.ScheduleRun, error)
}

// RoleService reads and writes role templates and lists finished agents (package
// roles implements it, DESIGN §12).
type RoleService interface {
	Roles(ctx context.Context) ([]wire.Role, error)
	RoleGet(ctx context.Context, name string) (wire.RoleResult, error)
	RolePut(ctx context.Context, p wire.RolePutParams) (wire.RoleResult, error)
	// AgentHistory lists finished agents (orcr history).
	AgentHistory(ctx context.Context, p wire.AgentHistoryParams) (wire.AgentHistoryResult, error)
}

// AccountService shows accounts, usage windows and budgets (package accounts
// implements it, DESIGN §10).
type AccountService interface {
	Accounts(ctx context.Context) (wire.AccountListResult, error)
	// Select says which account a spawn now would get, and why.
	Select(ctx context.Context, p wire.SelectParams) (wire.SelectResult, error)
	// History is one record per past window at its peak.
	History(ctx context.Context, p wire.HistoryParams) (wire.HistoryResult, error)
	Budgets(ctx context.Context) ([]wire.Budget, error)
	BudgetSet(ctx context.Context, p wire.BudgetSetParams) (wire.Budget, error)
	BudgetRemove(ctx context.Context, glob string) error
}

// PlanService runs plans: a lead agent writes a Markdown plan, the user approves or
// rejects it (package orchestrate implements it).
type PlanService interface {
	PlanNew(ctx context.Context, p wire.PlanNewParams) (wire.Plan, error)
	Plans(ctx context.Context) ([]wire.Plan, error)
	// PlanGet re-reads the plan's file, so what it returns is the file as it is now.
	PlanGet(ctx context.Context, name string) (wire.PlanGetResult, error)
	PlanApprove(ctx context.Context, name string) (wire.Plan, error)
	PlanReject(ctx context.Context, p wire.PlanRejectParams) (wire.Plan, error)
}

// CatalogService shows the model catalog (package orchestrate implements it).
type CatalogService interface {
	Catalog(ctx context.Context) (wire.CatalogResult, error)
}

// ListenerService runs listeners (package listen implements it): files under the
// config dir and documents written through the API.
type ListenerService interface {
	Listeners(ctx context.Context) ([]wire.Listener, error)
	ListenerGet(ctx context.Context, name string) (wire.Listener, error)
	ListenerPut(ctx context.Context, p wire.ListenerPutParams) (wire.Listener, error)
	ListenerRemove(ctx context.Context, name string) error
	ListenerEnable(ctx context.Context, name string, enabled bool) (wire.Listener, error)
}

// RunService runs orchestration runs (package orchestrate/run implements it).
type RunService interface {
	RunStart(ctx context.Context, p wire.RunStartParams) (wire.RunView, error)
	Runs(ctx context.Context) ([]wire.RunView, error)
	RunStatus(ctx context.Context, name string) (wire.RunView, error)
	RunEvents(ctx context.Context, p wire.RunEventsParams) ([]wire.RunEntry, error)
	RunStop(ctx context.Context, name string) (wire.RunView, error)
	RunFinish(ctx context.Context, name string) (wire.RunFinishResult, error)
	RunDispatch(ctx context.Context, p wire.RunMilestonesParams) (wire.RunView, error)
	RunHold(ctx context.Context, p wire.RunMilestonesParams) (wire.RunView, error)
	RunRetry(ctx context.Context, p wire.RunMilestonesParams) (wire.RunView, error)
	RunAnswer(ctx context.Context, p wire.RunTextParams) (wire.RunView, error)
	RunFix(ctx context.Context, p wire.RunTextParams) (wire.RunView, error)
	// RunDone and RunAsk come from inside a coder's pane: the run and the coder are
	// the verified caller's.
	RunDone(ctx context.Context, p wire.RunCallerParams) (wire.RunMilestone, error)
	RunAsk(ctx context.Context, p wire.RunCallerParams) (wire.RunMilestone, error)
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
