package socket

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	"orcr/core"
	"orcr/core/wire"
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
// through it; TestMethodTable checks it against wire.Methods. It is built on first use,
// not at init: a CLI process links this package for the client and never serves.
var handlers = sync.OnceValue(func() map[string]handler {
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
		serve(wire.ScheduleList, func(ctx context.Context, s core.Service, _ *wire.Empty) (wire.ScheduleListResult, error) {
			ss, err := s.Schedules(ctx)
			return wire.ScheduleListResult{Schedules: ss}, err
		}),
		serve(wire.ScheduleAdd, func(ctx context.Context, s core.Service, p *wire.ScheduleAddParams) (wire.ScheduleResult, error) {
			sc, err := s.ScheduleAdd(ctx, *p)
			return wire.ScheduleResult{Schedule: sc}, err
		}),
		serve(wire.ScheduleRemove, func(ctx context.Context, s core.Service, p *wire.ScheduleNameParams) (wire.Empty, error) {
			return wire.Empty{}, s.ScheduleRemove(ctx, p.Name)
		}),
		serve(wire.ScheduleRunNow, func(ctx context.Context, s core.Service, p *wire.ScheduleRunParams) (wire.ScheduleRunResult, error) {
			r, err := s.ScheduleRun(ctx, *p)
			return wire.ScheduleRunResult{Run: r}, err
		}),
		serve(wire.ScheduleRuns, func(ctx context.Context, s core.Service, p *wire.ScheduleNameParams) (wire.ScheduleRunsResult, error) {
			rs, err := s.ScheduleRuns(ctx, p.Name)
			return wire.ScheduleRunsResult{Runs: rs}, err
		}),
		serve(wire.AgentResume, func(ctx context.Context, s core.Service, p *wire.ResumeParams) (wire.AgentResult, error) {
			a, err := s.Resume(ctx, *p)
			return wire.AgentResult{Agent: a}, err
		}),
		serve(wire.RoleList, func(ctx context.Context, s core.Service, _ *wire.Empty) (wire.RoleListResult, error) {
			rs, err := s.Roles(ctx)
			if rs == nil {
				rs = []wire.Role{}
			}
			return wire.RoleListResult{Roles: rs}, err
		}),
		serve(wire.RoleGet, func(ctx context.Context, s core.Service, p *wire.RoleNameParams) (wire.RoleResult, error) {
			return s.RoleGet(ctx, p.Name)
		}),
		serve(wire.RolePut, func(ctx context.Context, s core.Service, p *wire.RolePutParams) (wire.RoleResult, error) {
			return s.RolePut(ctx, *p)
		}),
		serve(wire.AgentHistory, func(ctx context.Context, s core.Service, p *wire.AgentHistoryParams) (wire.AgentHistoryResult, error) {
			return s.AgentHistory(ctx, *p)
		}),
		serve(wire.AccountList, func(ctx context.Context, s core.Service, _ *wire.Empty) (wire.AccountListResult, error) {
			return s.Accounts(ctx)
		}),
		serve(wire.UsageSelect, func(ctx context.Context, s core.Service, p *wire.SelectParams) (wire.SelectResult, error) {
			return s.Select(ctx, *p)
		}),
		serve(wire.UsageHistory, func(ctx context.Context, s core.Service, p *wire.HistoryParams) (wire.HistoryResult, error) {
			return s.History(ctx, *p)
		}),
		serve(wire.BudgetList, func(ctx context.Context, s core.Service, _ *wire.Empty) (wire.BudgetListResult, error) {
			bs, err := s.Budgets(ctx)
			return wire.BudgetListResult{Budgets: bs}, err
		}),
		serve(wire.BudgetSet, func(ctx context.Context, s core.Service, p *wire.BudgetSetParams) (wire.BudgetResult, error) {
			b, err := s.BudgetSet(ctx, *p)
			return wire.BudgetResult{Budget: b}, err
		}),
		serve(wire.BudgetRemove, func(ctx context.Context, s core.Service, p *wire.BudgetGlobParams) (wire.Empty, error) {
			return wire.Empty{}, s.BudgetRemove(ctx, p.Glob)
		}),
		serve(wire.PlanNew, func(ctx context.Context, s core.Service, p *wire.PlanNewParams) (wire.PlanResult, error) {
			pl, err := s.PlanNew(ctx, *p)
			return wire.PlanResult{Plan: pl}, err
		}),
		serve(wire.PlanList, func(ctx context.Context, s core.Service, _ *wire.Empty) (wire.PlanListResult, error) {
			ps, err := s.Plans(ctx)
			if ps == nil {
				ps = []wire.Plan{}
			}
			return wire.PlanListResult{Plans: ps}, err
		}),
		serve(wire.PlanGet, func(ctx context.Context, s core.Service, p *wire.PlanNameParams) (wire.PlanGetResult, error) {
			return s.PlanGet(ctx, p.Name)
		}),
		serve(wire.PlanApprove, func(ctx context.Context, s core.Service, p *wire.PlanNameParams) (wire.PlanResult, error) {
			pl, err := s.PlanApprove(ctx, p.Name)
			return wire.PlanResult{Plan: pl}, err
		}),
		serve(wire.PlanReject, func(ctx context.Context, s core.Service, p *wire.PlanRejectParams) (wire.PlanResult, error) {
			pl, err := s.PlanReject(ctx, *p)
			return wire.PlanResult{Plan: pl}, err
		}),
		serve(wire.CatalogGet, func(ctx context.Context, s core.Service, _ *wire.Empty) (wire.CatalogResult, error) {
			return s.Catalog(ctx)
		}),
		serve(wire.ListenerList, func(ctx context.Context, s core.Service, _ *wire.Empty) (wire.ListenerListResult, error) {
			ls, err := s.Listeners(ctx)
			if ls == nil {
				ls = []wire.Listener{}
			}
			return wire.ListenerListResult{Listeners: ls}, err
		}),
		serve(wire.ListenerGet, func(ctx context.Context, s core.Service, p *wire.ListenerNameParams) (wire.ListenerResult, error) {
			l, err := s.ListenerGet(ctx, p.Name)
			return wire.ListenerResult{Listener: l}, err
		}),
		serve(wire.ListenerPut, func(ctx context.Context, s core.Service, p *wire.ListenerPutParams) (wire.ListenerResult, error) {
			l, err := s.ListenerPut(ctx, *p)
			return wire.ListenerResult{Listener: l}, err
		}),
		serve(wire.ListenerRemove, func(ctx context.Context, s core.Service, p *wire.ListenerNameParams) (wire.Empty, error) {
			return wire.Empty{}, s.ListenerRemove(ctx, p.Name)
		}),
		serve(wire.ListenerEnable, func(ctx context.Context, s core.Service, p *wire.ListenerEnableParams) (wire.ListenerResult, error) {
			if p.Enabled == nil {
				return wire.ListenerResult{}, wire.Errorf(wire.CodeInvalidParams, "listener.enable: missing required param \"enabled\" (true or false)")
			}
			l, err := s.ListenerEnable(ctx, p.Name, *p.Enabled)
			return wire.ListenerResult{Listener: l}, err
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
})

// serve builds the handler of a unary method; the declaration types h.
func serve[P, R any](m wire.Unary[P, R], h func(ctx context.Context, s core.Service, p *P) (R, error)) handler {
	spec, _ := wire.Method(m.Name)
	return handler{spec: spec, decode: decoder[P](m.Name),
		unary: func(ctx context.Context, s core.Service, p any) (any, error) { return h(ctx, s, p.(*P)) }}
}

// heavy marks a handler heavy.
func heavy(h handler) handler {
	h.heavy = true
	return h
}

// serveStream builds the handler of a streaming method.
func serveStream[P, R, S any](m wire.Streaming[P, R, S], h func(s *Server, ctx context.Context, cn *conn, id string, p *P, r *bufio.Reader) bool) handler {
	spec, _ := wire.Method(m.Name)
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
