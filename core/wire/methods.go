package wire

import (
	"reflect"
	"strings"
)

// The method table. Each socket method is declared once, here, as a typed value: its
// name, what it does, and — as type parameters — its params and result (and, for a
// streaming method, the type of each line that follows the result). core/socket builds
// the server's dispatch and the client's calls from these values, so a handler or a
// call of the wrong type does not compile; the schema (schema.go) and the server's
// required-field check (Required) are derived from the same types.
//
// Adding a method: declare it below, give core/socket's handlers (methods.go) its
// entry and the Client its call, and give core.Service the method. TestMethodTable in
// core/socket fails while any of these is missing.

// MethodSpec describes one declared method for the schema and the server: its params
// and result types and, for streaming methods, the type of each line that follows.
type MethodSpec struct {
	Name        string
	Description string
	Params      any
	Result      any
	Stream      any // nil for unary methods
}

// Unary is a declared request/response method with params P and result R.
type Unary[P, R any] struct{ Name string }

// Streaming is a declared method whose result is followed by lines of type S on the
// same connection (or, for agent.attach, by a stream in both directions).
type Streaming[P, R, S any] struct{ Name string }

// Methods lists every declared method in declaration order. It is filled by the
// declarations below and must not be changed after package initialisation.
var Methods []MethodSpec

func unary[P, R any](name, desc string) Unary[P, R] {
	var p P
	var r R
	Methods = append(Methods, MethodSpec{Name: name, Description: desc, Params: p, Result: r})
	return Unary[P, R]{Name: name}
}

func streaming[P, R, S any](name, desc string) Streaming[P, R, S] {
	var p P
	var r R
	var s S
	Methods = append(Methods, MethodSpec{Name: name, Description: desc, Params: p, Result: r, Stream: s})
	return Streaming[P, R, S]{Name: name}
}

// The API, one declaration per method.
var (
	Ping            = unary[Empty, PingResult](MethodPing, "Liveness and protocol version.")
	Info            = unary[Empty, InfoResult](MethodInfo, "Server facts: pid, home, host and why it was chosen.")
	AgentRun        = unary[RunParams, AgentResult](MethodAgentRun, "Spawn an agent (queued, then admitted).")
	AgentList       = unary[ListParams, ListResult](MethodAgentList, "List agents matching a glob.")
	AgentGet        = unary[TargetParams, AgentResult](MethodAgentGet, "One agent by id, id prefix or path.")
	AgentSend       = unary[SendParams, Empty](MethodAgentSend, "Type text and/or press named keys.")
	AgentAnswer     = unary[AnswerParams, AnswerResult](MethodAgentAnswer, "Answer what a blocked agent waits for, by the options it shows.")
	AgentRead       = unary[ReadParams, ReadResult](MethodAgentRead, "Screen text, last message or transcript.")
	AgentWait       = unary[WaitParams, WaitResult](MethodAgentWait, "Wait until every matching agent reaches a state.")
	AgentKill       = unary[KillParams, KillResult](MethodAgentKill, "Stop every running agent matching a glob.")
	AgentResize     = unary[ResizeParams, Empty](MethodAgentResize, "Resize an agent's pane.")
	AgentAttach     = streaming[AttachParams, AttachResult, AttachFrame](MethodAgentAttach, "Attach: a native command, or an AttachFrame stream on this connection.")
	EventsSubscribe = streaming[SubscribeParams, SubscribeResult, Event](MethodEventsSubscribe, "Stream events after a cursor on this connection.")
	HookReport      = unary[HookParams, Empty](MethodHookReport, "A provider hook report from inside an agent.")
	QueueGet        = unary[Empty, QueueResult](MethodQueue, "The admission queue against its caps.")
	UsageGet        = unary[UsageParams, UsageResult](MethodUsage, "Tokens and cost by provider, model and window.")
	ScheduleList    = unary[Empty, ScheduleListResult](MethodScheduleList, "Durable schedules.")
	QueueCaps       = unary[CapsParams, QueueResult](MethodQueueCaps, "Change admission caps at runtime; absent fields keep their value.")
	GCRun           = unary[GCParams, GCResult](MethodGC, "Run lifecycle GC now (or say what it would do).")
	ScheduleAdd     = unary[ScheduleAddParams, ScheduleResult](MethodScheduleAdd, "Create a durable schedule.")
	ScheduleRemove  = unary[ScheduleNameParams, Empty](MethodScheduleRemove, "Remove a schedule and its run history.")
	ScheduleRunNow  = unary[ScheduleRunParams, ScheduleRunResult](MethodScheduleRun, "Run a schedule now.")
	ScheduleRuns    = unary[ScheduleNameParams, ScheduleRunsResult](MethodScheduleRuns, "A schedule's run history, oldest first.")
	AgentResume     = unary[ResumeParams, AgentResult](MethodAgentResume, "Resume an ended or hibernated agent through its provider's session: a new record linked to the old.")
	RoleList        = unary[Empty, RoleListResult](MethodRoleList, "Role templates ($XDG_CONFIG_HOME/orcr/roles), broken ones with their error.")
	RoleGet         = unary[RoleNameParams, RoleResult](MethodRoleGet, "One role: its values, where each came from, and its file's text.")
	RolePut         = unary[RolePutParams, RoleResult](MethodRolePut, "Write a role file (refused with its line when it does not load).")
	AgentHistory    = unary[AgentHistoryParams, AgentHistoryResult](MethodHistoryList, "Finished agents, newest first: role, duration, tokens, cost, result.")
	AccountList     = unary[Empty, AccountListResult](MethodAccountList, "Accounts per provider with their usage windows.")
	UsageSelect     = unary[SelectParams, SelectResult](MethodUsageSelect, "Which account a spawn now would get, and why.")
	UsageHistory    = unary[HistoryParams, HistoryResult](MethodUsageHistory, "One record per past usage window at its peak.")
	BudgetList      = unary[Empty, BudgetListResult](MethodBudgetList, "Budgets with what their subtrees have spent.")
	BudgetSet       = unary[BudgetSetParams, BudgetResult](MethodBudgetSet, "Create or replace a budget on a glob.")
	BudgetRemove    = unary[BudgetGlobParams, Empty](MethodBudgetRemove, "Remove a budget.")
	PlanNew         = unary[PlanNewParams, PlanResult](MethodPlanNew, "Start a plan: a lead agent at plans/NAME/lead writes .orcr/plans/NAME.md.")
	PlanList        = unary[Empty, PlanListResult](MethodPlanList, "Every plan, in name order.")
	PlanGet         = unary[PlanNameParams, PlanGetResult](MethodPlanGet, "One plan: its record and its file as it is now (milestones, problems by line, text).")
	PlanApprove     = unary[PlanNameParams, PlanResult](MethodPlanApprove, "Approve a drafted plan: the file's sha256 is recorded.")
	PlanReject      = unary[PlanRejectParams, PlanResult](MethodPlanReject, "Reject a drafted plan with a reason the lead redrafts from.")
	CatalogGet      = unary[Empty, CatalogResult](MethodCatalogGet, "The model catalog: ratings, tiers, premium models.")
	ListenerList    = unary[Empty, ListenerListResult](MethodListenerList, "Listeners with their state, last and next poll, fires, held events and rate limits.")
	ListenerGet     = unary[ListenerNameParams, ListenerResult](MethodListenerGet, "One listener with its document, cursors and held events.")
	ListenerPut     = unary[ListenerPutParams, ListenerResult](MethodListenerPut, "Write a listener document (TOML) through the API; refused with the line when it does not parse.")
	ListenerRemove  = unary[ListenerNameParams, Empty](MethodListenerRemove, "Remove a listener written through the API.")
	ListenerEnable  = unary[ListenerEnableParams, ListenerResult](MethodListenerEnable, "Enable or disable a listener.")
)

// Method returns the spec of a method by name.
func Method(name string) (MethodSpec, bool) {
	for _, m := range Methods {
		if m.Name == name {
			return m, true
		}
	}
	return MethodSpec{}, false
}

// Required is the one rule for required fields, used by the schema and by the
// server's check alike: an exported field whose json tag has no omitempty and whose
// type is not a pointer is required. It returns the fields of struct type t in
// order, each with its JSON name and field index.
func Required(t reflect.Type) []Field {
	var out []Field
	for _, f := range fields(t) {
		if f.Required {
			out = append(out, f)
		}
	}
	return out
}

// Field is one JSON field of a struct type.
type Field struct {
	Name     string // JSON name
	Index    int    // struct field index
	Type     reflect.Type
	Required bool
}

func fields(t reflect.Type) []Field {
	var out []Field
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		req := !strings.Contains(opts, "omitempty") && f.Type.Kind() != reflect.Pointer
		out = append(out, Field{Name: name, Index: i, Type: f.Type, Required: req})
	}
	return out
}
