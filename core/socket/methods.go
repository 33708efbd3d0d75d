package socket

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"time"

	acctapi "orcr/accounts/api"
	"orcr/core"
	"orcr/core/wire"
	listenapi "orcr/listen/api"
	planapi "orcr/orchestrate/api"
	roleapi "orcr/roles/api"
	schedapi "orcr/schedule/api"
)

// handler is the server side of one method declared in wire's method table: how its
// params are decoded and checked, and what answers it.
type handler struct {
	spec wire.MethodSpec
	// decode decodes params strictly into a new *P and checks the required fields.
	decode func(raw json.RawMessage) (any, error)
	// unary answers a request/response method.
	unary func(ctx context.Context, svc core.Service, p any) (any, error)
	// stream serves a streaming method on its connection; it returns true when the
	// connection is used up.
	stream func(s *Server, ctx context.Context, cn *conn, id string, p any, r *bufio.Reader) bool
	// heavy answers take CPU in proportion to the records (agent.list: copy and sort
	// under the engine's lock, then encode): they run a few at a time server-wide
	// (Server.heavy), so a burst of them waits where a closed connection's can leave.
	heavy bool
}

// handlers holds every declared method's handler, by name. The server dispatches only
// through it; TestMethodTable checks it against wire.Methods.
var handlers = func() map[string]handler {
	table := []handler{
		serve(wire.Ping, func(ctx context.Context, s core.Service, _ *wire.Empty) (wire.PingResult, error) { return s.Ping(ctx) }),
		serve(wire.Info, func(ctx context.Context, s core.Service, _ *wire.Empty) (wire.InfoResult, error) { return s.Info(ctx) }),
		serve(wire.AgentRun, func(ctx context.Context, s core.Service, p *wire.RunParams) (wire.AgentResult, error) {
			a, err := s.Run(ctx, *p)
			return wire.AgentResult{Agent: a}, err
		}),
		heavy(serve(wire.AgentList, func(ctx context.Context, s core.Service, p *wire.ListParams) (wire.ListResult, error) {
			as, err := s.List(ctx, *p)
			var next string
			if err == nil {
				as, next = page(as, p.After, p.Limit)
			}
			if as == nil {
				as = []wire.Agent{}
			}
			if p.Table && err == nil {
				return wire.ListResult{Agents: []wire.Agent{}, Table: tableOf(as, time.Now()), Next: next}, nil
			}
			return wire.ListResult{Agents: as, Next: next}, err
		})),
		serve(wire.AgentGet, func(ctx context.Context, s core.Service, p *wire.TargetParams) (wire.AgentResult, error) {
			a, err := s.Get(ctx, p.Target)
			return wire.AgentResult{Agent: a}, err
		}),
		serve(wire.AgentSend, func(ctx context.Context, s core.Service, p *wire.SendParams) (wire.Empty, error) {
			return wire.Empty{}, s.Send(ctx, *p)
		}),
		serve(wire.AgentAnswer, func(ctx context.Context, s core.Service, p *wire.AnswerParams) (wire.AnswerResult, error) {
			return s.Answer(ctx, *p)
		}),
		serve(wire.AgentRead, func(ctx context.Context, s core.Service, p *wire.ReadParams) (wire.ReadResult, error) {
			return s.Read(ctx, *p)
		}),
		serve(wire.AgentWait, func(ctx context.Context, s core.Service, p *wire.WaitParams) (wire.WaitResult, error) {
			return s.Wait(ctx, *p)
		}),
		serve(wire.AgentKill, func(ctx context.Context, s core.Service, p *wire.KillParams) (wire.KillResult, error) {
			return s.Kill(ctx, *p)
		}),
		serve(wire.AgentResize, func(ctx context.Context, s core.Service, p *wire.ResizeParams) (wire.Empty, error) {
			return wire.Empty{}, s.Resize(ctx, *p)
		}),
		serveStream(wire.AgentAttach, func(s *Server, ctx context.Context, cn *conn, id string, p *wire.AttachParams, r *bufio.Reader) bool {
			return s.attach(ctx, cn, id, p, r)
		}),
		serveStream(wire.EventsSubscribe, func(s *Server, ctx context.Context, cn *conn, id string, p *wire.SubscribeParams, r *bufio.Reader) bool {
			s.streamEvents(ctx, cn, id, p, r)
			return true // the connection is dedicated to the stream from here on
		}),
		serve(wire.HookReport, func(ctx context.Context, s core.Service, p *wire.HookParams) (wire.Empty, error) {
			return wire.Empty{}, s.Hook(ctx, *p)
		}),
		serve(wire.QueueGet, func(ctx context.Context, s core.Service, _ *wire.Empty) (wire.QueueResult, error) {
			return s.Queue(ctx)
		}),
		serve(wire.UsageGet, func(ctx context.Context, s core.Service, p *wire.UsageParams) (wire.UsageResult, error) {
			return s.Usage(ctx, *p)
		}),
		serve(wire.QueueCaps, func(ctx context.Context, s core.Service, p *wire.CapsParams) (wire.QueueResult, error) {
			return s.SetCaps(ctx, *p)
		}),
		serve(wire.GCRun, func(ctx context.Context, s core.Service, p *wire.GCParams) (wire.GCResult, error) {
			return s.GC(ctx, *p)
		}),
		serve(schedapi.ScheduleList, func(ctx context.Context, s core.Service, _ *wire.Empty) (schedapi.ScheduleListResult, error) {
			ss, err := s.Schedules(ctx)
			return schedapi.ScheduleListResult{Schedules: ss}, err
		}),
		serve(schedapi.ScheduleAdd, func(ctx context.Context, s core.Service, p *schedapi.ScheduleAddParams) (schedapi.ScheduleResult, error) {
			sc, err := s.ScheduleAdd(ctx, *p)
			return schedapi.ScheduleResult{Schedule: sc}, err
		}),
		serve(schedapi.ScheduleRemove, func(ctx context.Context, s core.Service, p *schedapi.ScheduleNameParams) (wire.Empty, error) {
			return wire.Empty{}, s.ScheduleRemove(ctx, p.Name)
		}),
		serve(schedapi.ScheduleRunNow, func(ctx context.Context, s core.Service, p *schedapi.ScheduleRunParams) (schedapi.ScheduleRunResult, error) {
			r, err := s.ScheduleRun(ctx, *p)
			return schedapi.ScheduleRunResult{Run: r}, err
		}),
		serve(schedapi.ScheduleRuns, func(ctx context.Context, s core.Service, p *schedapi.ScheduleNameParams) (schedapi.ScheduleRunsResult, error) {
			rs, err := s.ScheduleRuns(ctx, p.Name)
			return schedapi.ScheduleRunsResult{Runs: rs}, err
		}),
		serve(wire.AgentResume, func(ctx context.Context, s core.Service, p *wire.ResumeParams) (wire.AgentResult, error) {
			a, err := s.Resume(ctx, *p)
			return wire.AgentResult{Agent: a}, err
		}),
		serve(roleapi.RoleList, func(ctx context.Context, s core.Service, _ *wire.Empty) (roleapi.RoleListResult, error) {
			rs, err := s.Roles(ctx)
			if rs == nil {
				rs = []roleapi.Role{}
			}
			return roleapi.RoleListResult{Roles: rs}, err
		}),
		serve(roleapi.RoleGet, func(ctx context.Context, s core.Service, p *roleapi.RoleNameParams) (roleapi.RoleResult, error) {
			return s.RoleGet(ctx, p.Name)
		}),
		serve(roleapi.RolePut, func(ctx context.Context, s core.Service, p *roleapi.RolePutParams) (roleapi.RoleResult, error) {
			return s.RolePut(ctx, *p)
		}),
		serve(roleapi.AgentHistory, func(ctx context.Context, s core.Service, p *roleapi.AgentHistoryParams) (roleapi.AgentHistoryResult, error) {
			return s.AgentHistory(ctx, *p)
		}),
		serve(acctapi.AccountList, func(ctx context.Context, s core.Service, _ *wire.Empty) (acctapi.AccountListResult, error) {
			return s.Accounts(ctx)
		}),
		serve(acctapi.UsageSelect, func(ctx context.Context, s core.Service, p *acctapi.SelectParams) (acctapi.SelectResult, error) {
			return s.Select(ctx, *p)
		}),
		serve(acctapi.UsageHistory, func(ctx context.Context, s core.Service, p *acctapi.HistoryParams) (acctapi.HistoryResult, error) {
			return s.History(ctx, *p)
		}),
		serve(acctapi.BudgetList, func(ctx context.Context, s core.Service, _ *wire.Empty) (acctapi.BudgetListResult, error) {
			bs, err := s.Budgets(ctx)
			return acctapi.BudgetListResult{Budgets: bs}, err
		}),
		serve(acctapi.BudgetSet, func(ctx context.Context, s core.Service, p *acctapi.BudgetSetParams) (acctapi.BudgetResult, error) {
			b, err := s.BudgetSet(ctx, *p)
			return acctapi.BudgetResult{Budget: b}, err
		}),
		serve(acctapi.BudgetRemove, func(ctx context.Context, s core.Service, p *acctapi.BudgetGlobParams) (wire.Empty, error) {
			return wire.Empty{}, s.BudgetRemove(ctx, p.Glob)
		}),
		serve(planapi.PlanNew, func(ctx context.Context, s core.Service, p *planapi.PlanNewParams) (planapi.PlanResult, error) {
			pl, err := s.PlanNew(ctx, *p)
			return planapi.PlanResult{Plan: pl}, err
		}),
		serve(planapi.PlanList, func(ctx context.Context, s core.Service, _ *wire.Empty) (planapi.PlanListResult, error) {
			ps, err := s.Plans(ctx)
			if ps == nil {
				ps = []planapi.Plan{}
			}
			return planapi.PlanListResult{Plans: ps}, err
		}),
		serve(planapi.PlanGet, func(ctx context.Context, s core.Service, p *planapi.PlanNameParams) (planapi.PlanGetResult, error) {
			return s.PlanGet(ctx, p.Name)
		}),
		serve(planapi.PlanApprove, func(ctx context.Context, s core.Service, p *planapi.PlanNameParams) (planapi.PlanResult, error) {
			pl, err := s.PlanApprove(ctx, p.Name)
			return planapi.PlanResult{Plan: pl}, err
		}),
		serve(planapi.PlanReject, func(ctx context.Context, s core.Service, p *planapi.PlanRejectParams) (planapi.PlanResult, error) {
			pl, err := s.PlanReject(ctx, *p)
			return planapi.PlanResult{Plan: pl}, err
		}),
		serve(planapi.CatalogGet, func(ctx context.Context, s core.Service, _ *wire.Empty) (planapi.CatalogResult, error) {
			return s.Catalog(ctx)
		}),
		serve(listenapi.ListenerList, func(ctx context.Context, s core.Service, _ *wire.Empty) (listenapi.ListenerListResult, error) {
			ls, err := s.Listeners(ctx)
			if ls == nil {
				ls = []listenapi.Listener{}
			}
			return listenapi.ListenerListResult{Listeners: ls}, err
		}),
		serve(listenapi.ListenerGet, func(ctx context.Context, s core.Service, p *listenapi.ListenerNameParams) (listenapi.ListenerResult, error) {
			l, err := s.ListenerGet(ctx, p.Name)
			return listenapi.ListenerResult{Listener: l}, err
		}),
		serve(listenapi.ListenerPut, func(ctx context.Context, s core.Service, p *listenapi.ListenerPutParams) (listenapi.ListenerResult, error) {
			l, err := s.ListenerPut(ctx, *p)
			return listenapi.ListenerResult{Listener: l}, err
		}),
		serve(listenapi.ListenerRemove, func(ctx context.Context, s core.Service, p *listenapi.ListenerNameParams) (wire.Empty, error) {
			return wire.Empty{}, s.ListenerRemove(ctx, p.Name)
		}),
		serve(listenapi.ListenerEnable, func(ctx context.Context, s core.Service, p *listenapi.ListenerEnableParams) (listenapi.ListenerResult, error) {
			if p.Enabled == nil {
				return listenapi.ListenerResult{}, wire.Errorf(wire.CodeInvalidParams, "listener.enable: missing required param \"enabled\" (true or false)")
			}
			l, err := s.ListenerEnable(ctx, p.Name, *p.Enabled)
			return listenapi.ListenerResult{Listener: l}, err
		}),
	}
	table = append(table, runHandlers...)
	m := make(map[string]handler, len(table))
	for _, h := range table {
		if _, dup := m[h.spec.Name]; dup {
			panic("socket: two handlers for " + h.spec.Name)
		}
		m[h.spec.Name] = h
	}
	return m
}()

// serve builds the handler of a unary method; the declaration types h.
func serve[P, R any](m wire.Method[P, R], h func(ctx context.Context, s core.Service, p *P) (R, error)) handler {
	spec, _ := wire.Lookup(m.Name)
	return handler{spec: spec, decode: decoder[P](m.Name),
		unary: func(ctx context.Context, s core.Service, p any) (any, error) { return h(ctx, s, p.(*P)) }}
}

// heavy marks a handler heavy.
func heavy(h handler) handler {
	h.heavy = true
	return h
}

// serveStream builds the handler of a streaming method.
func serveStream[P, R, S any](m wire.Stream[P, R, S], h func(s *Server, ctx context.Context, cn *conn, id string, p *P, r *bufio.Reader) bool) handler {
	spec, _ := wire.Lookup(m.Name)
	return handler{spec: spec, decode: decoder[P](m.Name),
		stream: func(s *Server, ctx context.Context, cn *conn, id string, p any, r *bufio.Reader) bool {
			return h(s, ctx, cn, id, p.(*P), r)
		}}
}

// decoder decodes params strictly (unknown fields are an error) into a new *P, then
// checks the fields wire.Required names: the schema's rule, applied to values. A
// required field holding its zero value counts as missing, since a Go client always
// sends every field that has no omitempty.
func decoder[P any](method string) func(json.RawMessage) (any, error) {
	required := wire.Required(reflect.TypeFor[P]())
	return func(raw json.RawMessage) (any, error) {
		p := new(P)
		if len(raw) > 0 && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			dec := json.NewDecoder(bytes.NewReader(raw))
			dec.DisallowUnknownFields()
			if err := dec.Decode(p); err != nil {
				return nil, wire.Errorf(wire.CodeInvalidParams, "%s: bad params: %v; see `orcr api schema`", method, err)
			}
		}
		if len(required) > 0 {
			v := reflect.ValueOf(p).Elem()
			var missing []string
			for _, f := range required {
				if v.Field(f.Index).IsZero() {
					missing = append(missing, f.Name)
				}
			}
			if len(missing) > 0 {
				return nil, wire.Errorf(wire.CodeInvalidParams, "%s: missing required param %s; see `orcr api schema`",
					method, quoteAll(missing))
			}
		}
		if err := wire.CheckRanges(method, p); err != nil {
			return nil, err
		}
		return p, nil
	}
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}
