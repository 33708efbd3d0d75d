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
	return wire.CheckPing(call(ctx, c, wire.Ping, wire.Empty{}))
}

// Info describes the server.
func (c *Client) Info(ctx context.Context) (wire.InfoResult, error) {
	return call(ctx, c, wire.Info, wire.Empty{})
}

// Run spawns an agent.
func (c *Client) Run(ctx context.Context, p wire.RunParams) (wire.Agent, error) {
	return get(ctx, c, wire.AgentRun, p, agentOf)
}

// Get returns one agent.
func (c *Client) Get(ctx context.Context, target string) (wire.Agent, error) {
	return get(ctx, c, wire.AgentGet, wire.TargetParams{Target: target}, agentOf)
}

// Send types into a pane.
func (c *Client) Send(ctx context.Context, p wire.SendParams) error {
	return do(ctx, c, wire.AgentSend, p)
}

// Answer answers what blocked agents wait for.
func (c *Client) Answer(ctx context.Context, p wire.AnswerParams) (wire.AnswerResult, error) {
	return call(ctx, c, wire.AgentAnswer, p)
}

// Read reads a screen.
func (c *Client) Read(ctx context.Context, p wire.ReadParams) (wire.ReadResult, error) {
	return call(ctx, c, wire.AgentRead, p)
}

// Wait waits for states.
func (c *Client) Wait(ctx context.Context, p wire.WaitParams) (wire.WaitResult, error) {
	return call(ctx, c, wire.AgentWait, p)
}

// Kill stops agents.
func (c *Client) Kill(ctx context.Context, p wire.KillParams) (wire.KillResult, error) {
	return call(ctx, c, wire.AgentKill, p)
}

// Resize resizes a pane.
func (c *Client) Resize(ctx context.Context, p wire.ResizeParams) error {
	return do(ctx, c, wire.AgentResize, p)
}

// Hook reports a provider hook.
func (c *Client) Hook(ctx context.Context, p wire.HookParams) error {
	return do(ctx, c, wire.HookReport, p)
}

// Queue shows the queue.
func (c *Client) Queue(ctx context.Context) (wire.QueueResult, error) {
	return call(ctx, c, wire.QueueGet, wire.Empty{})
}

// Usage reports usage.
func (c *Client) Usage(ctx context.Context, p wire.UsageParams) (wire.UsageResult, error) {
	return call(ctx, c, wire.UsageGet, p)
}

// SetCaps changes admission caps.
func (c *Client) SetCaps(ctx context.Context, p wire.CapsParams) (wire.QueueResult, error) {
	return call(ctx, c, wire.QueueCaps, p)
}

// GC runs lifecycle collection.
func (c *Client) GC(ctx context.Context, p wire.GCParams) (wire.GCResult, error) {
	return call(ctx, c, wire.GCRun, p)
}

// Schedules lists schedules.
func (c *Client) Schedules(ctx context.Context) ([]schedapi.Schedule, error) {
	return get(ctx, c, schedapi.ScheduleList, wire.Empty{}, schedulesOf)
}

// ScheduleAdd creates a schedule.
func (c *Client) ScheduleAdd(ctx context.Context, p schedapi.ScheduleAddParams) (schedapi.Schedule, error) {
	return get(ctx, c, schedapi.ScheduleAdd, p, scheduleOf)
}

// ScheduleRemove deletes a schedule.
func (c *Client) ScheduleRemove(ctx context.Context, name string) error {
	return do(ctx, c, schedapi.ScheduleRemove, schedapi.ScheduleNameParams{Name: name})
}

// ScheduleRun runs a schedule now.
func (c *Client) ScheduleRun(ctx context.Context, p schedapi.ScheduleRunParams) (schedapi.ScheduleRun, error) {
	return get(ctx, c, schedapi.ScheduleRunNow, p, scheduleRunOf)
}

// ScheduleRuns returns a schedule's run history.
func (c *Client) ScheduleRuns(ctx context.Context, name string) ([]schedapi.ScheduleRun, error) {
	return get(ctx, c, schedapi.ScheduleRuns, schedapi.ScheduleNameParams{Name: name}, scheduleRunsOf)
}

// Accounts lists accounts with their windows.
func (c *Client) Accounts(ctx context.Context) (acctapi.AccountListResult, error) {
	return call(ctx, c, acctapi.AccountList, wire.Empty{})
}

// Select says which account a spawn now would get.
func (c *Client) Select(ctx context.Context, p acctapi.SelectParams) (acctapi.SelectResult, error) {
	return call(ctx, c, acctapi.UsageSelect, p)
}

// History returns past windows at their peaks.
func (c *Client) History(ctx context.Context, p acctapi.HistoryParams) (acctapi.HistoryResult, error) {
	return call(ctx, c, acctapi.UsageHistory, p)
}

// Budgets lists budgets.
func (c *Client) Budgets(ctx context.Context) ([]acctapi.Budget, error) {
	return get(ctx, c, acctapi.BudgetList, wire.Empty{}, budgetsOf)
}

// BudgetSet creates or replaces a budget.
func (c *Client) BudgetSet(ctx context.Context, p acctapi.BudgetSetParams) (acctapi.Budget, error) {
	return get(ctx, c, acctapi.BudgetSet, p, budgetOf)
}

// BudgetRemove removes a budget.
func (c *Client) BudgetRemove(ctx context.Context, glob string) error {
	return do(ctx, c, acctapi.BudgetRemove, acctapi.BudgetGlobParams{Glob: glob})
}

// Roles lists role templates.
func (c *Client) Roles(ctx context.Context) ([]roleapi.Role, error) {
	return get(ctx, c, roleapi.RoleList, wire.Empty{}, rolesOf)
}

// RoleGet returns one role and its file's text.
func (c *Client) RoleGet(ctx context.Context, name string) (roleapi.RoleResult, error) {
	return call(ctx, c, roleapi.RoleGet, roleapi.RoleNameParams{Name: name})
}

// RolePut writes a role file.
func (c *Client) RolePut(ctx context.Context, p roleapi.RolePutParams) (roleapi.RoleResult, error) {
	return call(ctx, c, roleapi.RolePut, p)
}

// AgentHistory lists finished agents.
func (c *Client) AgentHistory(ctx context.Context, p roleapi.AgentHistoryParams) (roleapi.AgentHistoryResult, error) {
	return call(ctx, c, roleapi.AgentHistory, p)
}

// Resume brings an ended or hibernated agent back by its session.
func (c *Client) Resume(ctx context.Context, p wire.ResumeParams) (wire.Agent, error) {
	return get(ctx, c, wire.AgentResume, p, agentOf)
}

// PlanNew starts a plan.
func (c *Client) PlanNew(ctx context.Context, p planapi.PlanNewParams) (planapi.Plan, error) {
	return get(ctx, c, planapi.PlanNew, p, planOf)
}

// Plans lists every plan.
func (c *Client) Plans(ctx context.Context) ([]planapi.Plan, error) {
	return get(ctx, c, planapi.PlanList, wire.Empty{}, plansOf)
}

// PlanGet returns one plan and its file as it is now.
func (c *Client) PlanGet(ctx context.Context, name string) (planapi.PlanGetResult, error) {
	return call(ctx, c, planapi.PlanGet, planapi.PlanNameParams{Name: name})
}

// PlanApprove approves a drafted plan.
func (c *Client) PlanApprove(ctx context.Context, name string) (planapi.Plan, error) {
	return get(ctx, c, planapi.PlanApprove, planapi.PlanNameParams{Name: name}, planOf)
}

// PlanReject rejects a drafted plan with a reason.
func (c *Client) PlanReject(ctx context.Context, p planapi.PlanRejectParams) (planapi.Plan, error) {
	return get(ctx, c, planapi.PlanReject, p, planOf)
}

// Catalog returns the model catalog.
func (c *Client) Catalog(ctx context.Context) (planapi.CatalogResult, error) {
	return call(ctx, c, planapi.CatalogGet, wire.Empty{})
}

// Listeners lists listeners.
func (c *Client) Listeners(ctx context.Context) ([]listenapi.Listener, error) {
	return get(ctx, c, listenapi.ListenerList, wire.Empty{}, listenersOf)
}

// ListenerGet returns one listener in full.
func (c *Client) ListenerGet(ctx context.Context, name string) (listenapi.Listener, error) {
	return get(ctx, c, listenapi.ListenerGet, listenapi.ListenerNameParams{Name: name}, listenerOf)
}

// ListenerPut writes a listener document.
func (c *Client) ListenerPut(ctx context.Context, p listenapi.ListenerPutParams) (listenapi.Listener, error) {
	return get(ctx, c, listenapi.ListenerPut, p, listenerOf)
}

// ListenerRemove removes a listener written through the API.
func (c *Client) ListenerRemove(ctx context.Context, name string) error {
	return do(ctx, c, listenapi.ListenerRemove, listenapi.ListenerNameParams{Name: name})
}

// ListenerEnable enables or disables a listener.
func (c *Client) ListenerEnable(ctx context.Context, name string, enabled bool) (listenapi.Listener, error) {
	return get(ctx, c, listenapi.ListenerEnable, listenapi.ListenerEnableParams{Name: name, Enabled: &enabled}, listenerOf)
}

// RunStart starts a run.
func (c *Client) RunStart(ctx context.Context, p runapi.RunStartParams) (runapi.RunView, error) {
	return get(ctx, c, runapi.RunStartM, p, runOf)
}

// Runs lists runs.
func (c *Client) Runs(ctx context.Context) ([]runapi.RunView, error) {
	return get(ctx, c, runapi.RunListM, wire.Empty{}, runsOf)
}

// RunStatus returns one run.
func (c *Client) RunStatus(ctx context.Context, name string) (runapi.RunView, error) {
	return get(ctx, c, runapi.RunStatusM, runapi.RunNameParams{Name: name}, runOf)
}

// RunEvents reads a run's log.
func (c *Client) RunEvents(ctx context.Context, p runapi.RunEventsParams) ([]runapi.RunEntry, error) {
	return get(ctx, c, runapi.RunEventsM, p, entriesOf)
}

// RunStop stops a run.
func (c *Client) RunStop(ctx context.Context, name string) (runapi.RunView, error) {
	return get(ctx, c, runapi.RunStopM, runapi.RunNameParams{Name: name}, runOf)
}

// RunFinish finishes a run.
func (c *Client) RunFinish(ctx context.Context, name string) (runapi.RunFinishResult, error) {
	return call(ctx, c, runapi.RunFinishM, runapi.RunNameParams{Name: name})
}

// RunDispatch starts ready milestones.
func (c *Client) RunDispatch(ctx context.Context, p runapi.RunMilestonesParams) (runapi.RunView, error) {
	return get(ctx, c, runapi.RunDispatchM, p, runOf)
}

// RunHold holds milestones.
func (c *Client) RunHold(ctx context.Context, p runapi.RunMilestonesParams) (runapi.RunView, error) {
	return get(ctx, c, runapi.RunHoldM, p, runOf)
}

// RunRetry retries milestones.
func (c *Client) RunRetry(ctx context.Context, p runapi.RunMilestonesParams) (runapi.RunView, error) {
	return get(ctx, c, runapi.RunRetryM, p, runOf)
}

// RunAnswer answers a coder's question.
func (c *Client) RunAnswer(ctx context.Context, p runapi.RunTextParams) (runapi.RunView, error) {
	return get(ctx, c, runapi.RunAnswerM, p, runOf)
}

// RunFix sends a follow-up job.
func (c *Client) RunFix(ctx context.Context, p runapi.RunTextParams) (runapi.RunView, error) {
	return get(ctx, c, runapi.RunFixM, p, runOf)
}

// RunDone reports a milestone done from a coder's pane.
func (c *Client) RunDone(ctx context.Context, p runapi.RunCallerParams) (runapi.RunMilestone, error) {
	return call(ctx, c, runapi.RunDoneM, p)
}

// RunAsk asks a question from a coder's pane.
func (c *Client) RunAsk(ctx context.Context, p runapi.RunCallerParams) (runapi.RunMilestone, error) {
	return call(ctx, c, runapi.RunAskM, p)
}

// call, get and do are the one shape every method above has: call a declaration over
// the client's transport, and keep the whole result, one field of it, or only the error.
func call[P, R any](ctx context.Context, c *Client, m wire.Method[P, R], p P) (R, error) {
	return wire.Call(ctx, c.Transport, m, p)
}

func get[P, R, V any](ctx context.Context, c *Client, m wire.Method[P, R], p P, field func(R) V) (V, error) {
	r, err := wire.Call(ctx, c.Transport, m, p)
	return field(r), err
}

func do[P, R any](ctx context.Context, c *Client, m wire.Method[P, R], p P) error {
	_, err := wire.Call(ctx, c.Transport, m, p)
	return err
}

// The fields get keeps, one a result type.
func agentOf(r wire.AgentResult) wire.Agent                               { return r.Agent }
func schedulesOf(r schedapi.ScheduleListResult) []schedapi.Schedule       { return r.Schedules }
func scheduleOf(r schedapi.ScheduleResult) schedapi.Schedule              { return r.Schedule }
func scheduleRunOf(r schedapi.ScheduleRunResult) schedapi.ScheduleRun     { return r.Run }
func scheduleRunsOf(r schedapi.ScheduleRunsResult) []schedapi.ScheduleRun { return r.Runs }
func budgetsOf(r acctapi.BudgetListResult) []acctapi.Budget               { return r.Budgets }
func budgetOf(r acctapi.BudgetResult) acctapi.Budget                      { return r.Budget }
func rolesOf(r roleapi.RoleListResult) []roleapi.Role                     { return r.Roles }
func planOf(r planapi.PlanResult) planapi.Plan                            { return r.Plan }
func plansOf(r planapi.PlanListResult) []planapi.Plan                     { return r.Plans }
func listenersOf(r listenapi.ListenerListResult) []listenapi.Listener     { return r.Listeners }
func listenerOf(r listenapi.ListenerResult) listenapi.Listener            { return r.Listener }
func runsOf(r runapi.RunListResult) []runapi.RunView                      { return r.Runs }
func entriesOf(r runapi.RunEventsResult) []runapi.RunEntry                { return r.Entries }
func runOf(r runapi.RunResult) runapi.RunView                             { return r.Run }
