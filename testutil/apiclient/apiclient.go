// Package apiclient is a typed client for tests: one Go method per socket method over
// any wire.Transport (the socket client or the in-process transport), so the many tests
// that drive a server keep reading as calls (c.Get(ctx, path)) rather than declarations.
// Production code (cli, ui) calls wire.Call with the declarations instead; nothing but
// tests may import this package.
package apiclient

import (
	"context"
	"io"

	acctapi "orcr/accounts/api"
	"orcr/core/socket"
	"orcr/core/wire"
	listenapi "orcr/listen/api"
	planapi "orcr/orchestrate/api"
	runapi "orcr/orchestrate/run/api"
	roleapi "orcr/roles/api"
	schedapi "orcr/schedule/api"
)

// Client is a transport with a typed method per socket method.
type Client struct {
	wire.Transport
	sock *socket.Client
}

// Dial connects to the server at path as the socket client does.
func Dial(ctx context.Context, path, caller string) (*Client, error) {
	sc, err := socket.Dial(ctx, path, caller)
	if err != nil {
		return nil, err
	}
	return &Client{Transport: sc, sock: sc}, nil
}

// Over wraps a transport (the in-process one, say).
func Over(t wire.Transport) *Client { return &Client{Transport: t} }

// Close closes the socket connection, if any.
func (c *Client) Close() error {
	if c.sock != nil {
		return c.sock.Close()
	}
	return nil
}

// List lists every agent, a page at a time.
func (c *Client) List(ctx context.Context, p wire.ListParams) ([]wire.Agent, error) {
	return wire.ListAgents(ctx, c.Transport, p)
}

// ListTable lists agents as display rows.
func (c *Client) ListTable(ctx context.Context, p wire.ListParams) (*wire.Table, error) {
	return wire.ListTable(ctx, c.Transport, p)
}

// Subscribe follows the event stream.
func (c *Client) Subscribe(ctx context.Context, p wire.SubscribeParams) (<-chan wire.Event, error) {
	return wire.Subscribe(ctx, c.Transport, p)
}

// Attach asks how to attach.
func (c *Client) Attach(ctx context.Context, p wire.AttachParams) (wire.AttachResult, error) {
	return wire.Attach(ctx, c.Transport, p)
}

// AttachStream runs a stream attach.
func (c *Client) AttachStream(ctx context.Context, p wire.AttachParams, in io.Reader, out io.Writer) error {
	return wire.AttachStream(ctx, c.Transport, p, in, out)
}

// Ping checks the server.
func (c *Client) Ping(ctx context.Context) (wire.PingResult, error) {
	return wire.CheckPing(wire.Call(ctx, c.Transport, wire.Ping, wire.Empty{}))
}

// Info describes the server.
func (c *Client) Info(ctx context.Context) (wire.InfoResult, error) {
	return wire.Call(ctx, c.Transport, wire.Info, wire.Empty{})
}

// Run spawns an agent.
func (c *Client) Run(ctx context.Context, p wire.RunParams) (wire.Agent, error) {
	r, err := wire.Call(ctx, c.Transport, wire.AgentRun, p)
	return r.Agent, err
}

// Get returns one agent.
func (c *Client) Get(ctx context.Context, target string) (wire.Agent, error) {
	r, err := wire.Call(ctx, c.Transport, wire.AgentGet, wire.TargetParams{Target: target})
	return r.Agent, err
}

// Send types into a pane.
func (c *Client) Send(ctx context.Context, p wire.SendParams) error {
	_, err := wire.Call(ctx, c.Transport, wire.AgentSend, p)
	return err
}

// Answer answers what blocked agents wait for.
func (c *Client) Answer(ctx context.Context, p wire.AnswerParams) (wire.AnswerResult, error) {
	return wire.Call(ctx, c.Transport, wire.AgentAnswer, p)
}

// Read reads a screen.
func (c *Client) Read(ctx context.Context, p wire.ReadParams) (wire.ReadResult, error) {
	return wire.Call(ctx, c.Transport, wire.AgentRead, p)
}

// Wait waits for states.
func (c *Client) Wait(ctx context.Context, p wire.WaitParams) (wire.WaitResult, error) {
	return wire.Call(ctx, c.Transport, wire.AgentWait, p)
}

// Kill stops agents.
func (c *Client) Kill(ctx context.Context, p wire.KillParams) (wire.KillResult, error) {
	return wire.Call(ctx, c.Transport, wire.AgentKill, p)
}

// Resize resizes a pane.
func (c *Client) Resize(ctx context.Context, p wire.ResizeParams) error {
	_, err := wire.Call(ctx, c.Transport, wire.AgentResize, p)
	return err
}

// Hook reports a provider hook.
func (c *Client) Hook(ctx context.Context, p wire.HookParams) error {
	_, err := wire.Call(ctx, c.Transport, wire.HookReport, p)
	return err
}

// Queue shows the queue.
func (c *Client) Queue(ctx context.Context) (wire.QueueResult, error) {
	return wire.Call(ctx, c.Transport, wire.QueueGet, wire.Empty{})
}

// Usage reports usage.
func (c *Client) Usage(ctx context.Context, p wire.UsageParams) (wire.UsageResult, error) {
	return wire.Call(ctx, c.Transport, wire.UsageGet, p)
}

// SetCaps changes admission caps.
func (c *Client) SetCaps(ctx context.Context, p wire.CapsParams) (wire.QueueResult, error) {
	return wire.Call(ctx, c.Transport, wire.QueueCaps, p)
}

// GC runs lifecycle collection.
func (c *Client) GC(ctx context.Context, p wire.GCParams) (wire.GCResult, error) {
	return wire.Call(ctx, c.Transport, wire.GCRun, p)
}

// Schedules lists schedules.
func (c *Client) Schedules(ctx context.Context) ([]schedapi.Schedule, error) {
	r, err := wire.Call(ctx, c.Transport, schedapi.ScheduleList, wire.Empty{})
	return r.Schedules, err
}

// ScheduleAdd creates a schedule.
func (c *Client) ScheduleAdd(ctx context.Context, p schedapi.ScheduleAddParams) (schedapi.Schedule, error) {
	r, err := wire.Call(ctx, c.Transport, schedapi.ScheduleAdd, p)
	return r.Schedule, err
}

// ScheduleRemove deletes a schedule.
func (c *Client) ScheduleRemove(ctx context.Context, name string) error {
	_, err := wire.Call(ctx, c.Transport, schedapi.ScheduleRemove, schedapi.ScheduleNameParams{Name: name})
	return err
}

// ScheduleRun runs a schedule now.
func (c *Client) ScheduleRun(ctx context.Context, p schedapi.ScheduleRunParams) (schedapi.ScheduleRun, error) {
	r, err := wire.Call(ctx, c.Transport, schedapi.ScheduleRunNow, p)
	return r.Run, err
}

// ScheduleRuns returns a schedule's run history.
func (c *Client) ScheduleRuns(ctx context.Context, name string) ([]schedapi.ScheduleRun, error) {
	r, err := wire.Call(ctx, c.Transport, schedapi.ScheduleRuns, schedapi.ScheduleNameParams{Name: name})
	return r.Runs, err
}

// Accounts lists accounts with their windows.
func (c *Client) Accounts(ctx context.Context) (acctapi.AccountListResult, error) {
	return wire.Call(ctx, c.Transport, acctapi.AccountList, wire.Empty{})
}

// Select says which account a spawn now would get.
func (c *Client) Select(ctx context.Context, p acctapi.SelectParams) (acctapi.SelectResult, error) {
	return wire.Call(ctx, c.Transport, acctapi.UsageSelect, p)
}

// History returns past windows at their peaks.
func (c *Client) History(ctx context.Context, p acctapi.HistoryParams) (acctapi.HistoryResult, error) {
	return wire.Call(ctx, c.Transport, acctapi.UsageHistory, p)
}

// Budgets lists budgets.
func (c *Client) Budgets(ctx context.Context) ([]acctapi.Budget, error) {
	r, err := wire.Call(ctx, c.Transport, acctapi.BudgetList, wire.Empty{})
	return r.Budgets, err
}

// BudgetSet creates or replaces a budget.
func (c *Client) BudgetSet(ctx context.Context, p acctapi.BudgetSetParams) (acctapi.Budget, error) {
	r, err := wire.Call(ctx, c.Transport, acctapi.BudgetSet, p)
	return r.Budget, err
}

// BudgetRemove removes a budget.
func (c *Client) BudgetRemove(ctx context.Context, glob string) error {
	_, err := wire.Call(ctx, c.Transport, acctapi.BudgetRemove, acctapi.BudgetGlobParams{Glob: glob})
	return err
}

// Roles lists role templates.
func (c *Client) Roles(ctx context.Context) ([]roleapi.Role, error) {
	r, err := wire.Call(ctx, c.Transport, roleapi.RoleList, wire.Empty{})
	return r.Roles, err
}

// RoleGet returns one role and its file's text.
func (c *Client) RoleGet(ctx context.Context, name string) (roleapi.RoleResult, error) {
	return wire.Call(ctx, c.Transport, roleapi.RoleGet, roleapi.RoleNameParams{Name: name})
}

// RolePut writes a role file.
func (c *Client) RolePut(ctx context.Context, p roleapi.RolePutParams) (roleapi.RoleResult, error) {
	return wire.Call(ctx, c.Transport, roleapi.RolePut, p)
}

// AgentHistory lists finished agents.
func (c *Client) AgentHistory(ctx context.Context, p roleapi.AgentHistoryParams) (roleapi.AgentHistoryResult, error) {
	return wire.Call(ctx, c.Transport, roleapi.AgentHistory, p)
}

// Resume brings an ended or hibernated agent back by its session.
func (c *Client) Resume(ctx context.Context, p wire.ResumeParams) (wire.Agent, error) {
	r, err := wire.Call(ctx, c.Transport, wire.AgentResume, p)
	return r.Agent, err
}

// PlanNew starts a plan.
func (c *Client) PlanNew(ctx context.Context, p planapi.PlanNewParams) (planapi.Plan, error) {
	r, err := wire.Call(ctx, c.Transport, planapi.PlanNew, p)
	return r.Plan, err
}

// Plans lists every plan.
func (c *Client) Plans(ctx context.Context) ([]planapi.Plan, error) {
	r, err := wire.Call(ctx, c.Transport, planapi.PlanList, wire.Empty{})
	return r.Plans, err
}

// PlanGet returns one plan and its file as it is now.
func (c *Client) PlanGet(ctx context.Context, name string) (planapi.PlanGetResult, error) {
	return wire.Call(ctx, c.Transport, planapi.PlanGet, planapi.PlanNameParams{Name: name})
}

// PlanApprove approves a drafted plan.
func (c *Client) PlanApprove(ctx context.Context, name string) (planapi.Plan, error) {
	r, err := wire.Call(ctx, c.Transport, planapi.PlanApprove, planapi.PlanNameParams{Name: name})
	return r.Plan, err
}

// PlanReject rejects a drafted plan with a reason.
func (c *Client) PlanReject(ctx context.Context, p planapi.PlanRejectParams) (planapi.Plan, error) {
	r, err := wire.Call(ctx, c.Transport, planapi.PlanReject, p)
	return r.Plan, err
}

// Catalog returns the model catalog.
func (c *Client) Catalog(ctx context.Context) (planapi.CatalogResult, error) {
	return wire.Call(ctx, c.Transport, planapi.CatalogGet, wire.Empty{})
}

// Listeners lists listeners.
func (c *Client) Listeners(ctx context.Context) ([]listenapi.Listener, error) {
	r, err := wire.Call(ctx, c.Transport, listenapi.ListenerList, wire.Empty{})
	return r.Listeners, err
}

// ListenerGet returns one listener in full.
func (c *Client) ListenerGet(ctx context.Context, name string) (listenapi.Listener, error) {
	r, err := wire.Call(ctx, c.Transport, listenapi.ListenerGet, listenapi.ListenerNameParams{Name: name})
	return r.Listener, err
}

// ListenerPut writes a listener document.
func (c *Client) ListenerPut(ctx context.Context, p listenapi.ListenerPutParams) (listenapi.Listener, error) {
	r, err := wire.Call(ctx, c.Transport, listenapi.ListenerPut, p)
	return r.Listener, err
}

// ListenerRemove removes a listener written through the API.
func (c *Client) ListenerRemove(ctx context.Context, name string) error {
	_, err := wire.Call(ctx, c.Transport, listenapi.ListenerRemove, listenapi.ListenerNameParams{Name: name})
	return err
}

// ListenerEnable enables or disables a listener.
func (c *Client) ListenerEnable(ctx context.Context, name string, enabled bool) (listenapi.Listener, error) {
	r, err := wire.Call(ctx, c.Transport, listenapi.ListenerEnable, listenapi.ListenerEnableParams{Name: name, Enabled: &enabled})
	return r.Listener, err
}

// RunStart starts a run.
func (c *Client) RunStart(ctx context.Context, p runapi.RunStartParams) (runapi.RunView, error) {
	r, err := wire.Call(ctx, c.Transport, runapi.RunStartM, p)
	return r.Run, err
}

// Runs lists runs.
func (c *Client) Runs(ctx context.Context) ([]runapi.RunView, error) {
	r, err := wire.Call(ctx, c.Transport, runapi.RunListM, wire.Empty{})
	return r.Runs, err
}

// RunStatus returns one run.
func (c *Client) RunStatus(ctx context.Context, name string) (runapi.RunView, error) {
	r, err := wire.Call(ctx, c.Transport, runapi.RunStatusM, runapi.RunNameParams{Name: name})
	return r.Run, err
}

// RunEvents reads a run's log.
func (c *Client) RunEvents(ctx context.Context, p runapi.RunEventsParams) ([]runapi.RunEntry, error) {
	r, err := wire.Call(ctx, c.Transport, runapi.RunEventsM, p)
	return r.Entries, err
}

// RunStop stops a run.
func (c *Client) RunStop(ctx context.Context, name string) (runapi.RunView, error) {
	r, err := wire.Call(ctx, c.Transport, runapi.RunStopM, runapi.RunNameParams{Name: name})
	return r.Run, err
}

// RunFinish finishes a run.
func (c *Client) RunFinish(ctx context.Context, name string) (runapi.RunFinishResult, error) {
	return wire.Call(ctx, c.Transport, runapi.RunFinishM, runapi.RunNameParams{Name: name})
}

// RunDispatch starts ready milestones.
func (c *Client) RunDispatch(ctx context.Context, p runapi.RunMilestonesParams) (runapi.RunView, error) {
	r, err := wire.Call(ctx, c.Transport, runapi.RunDispatchM, p)
	return r.Run, err
}

// RunHold holds milestones.
func (c *Client) RunHold(ctx context.Context, p runapi.RunMilestonesParams) (runapi.RunView, error) {
	r, err := wire.Call(ctx, c.Transport, runapi.RunHoldM, p)
	return r.Run, err
}

// RunRetry retries milestones.
func (c *Client) RunRetry(ctx context.Context, p runapi.RunMilestonesParams) (runapi.RunView, error) {
	r, err := wire.Call(ctx, c.Transport, runapi.RunRetryM, p)
	return r.Run, err
}

// RunAnswer answers a coder's question.
func (c *Client) RunAnswer(ctx context.Context, p runapi.RunTextParams) (runapi.RunView, error) {
	r, err := wire.Call(ctx, c.Transport, runapi.RunAnswerM, p)
	return r.Run, err
}

// RunFix sends a follow-up job.
func (c *Client) RunFix(ctx context.Context, p runapi.RunTextParams) (runapi.RunView, error) {
	r, err := wire.Call(ctx, c.Transport, runapi.RunFixM, p)
	return r.Run, err
}

// RunDone reports a milestone done from a coder's pane.
func (c *Client) RunDone(ctx context.Context, p runapi.RunCallerParams) (runapi.RunMilestone, error) {
	return wire.Call(ctx, c.Transport, runapi.RunDoneM, p)
}

// RunAsk asks a question from a coder's pane.
func (c *Client) RunAsk(ctx context.Context, p runapi.RunCallerParams) (runapi.RunMilestone, error) {
	return wire.Call(ctx, c.Transport, runapi.RunAskM, p)
}
