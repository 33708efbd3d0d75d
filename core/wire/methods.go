package wire

import (
	"reflect"
	"strings"
)

// The method table. Each socket method is declared once, as a typed value: its name,
// what it does, and — as type parameters — its params and result (and, for a
// streaming method, the type of each line that follows the result). The kernel's
// methods are declared below; each feature declares its own in its api package
// (schedule/api, roles/api, …). The server's dispatch and the client's calls are built
// from these values, so a handler or a call of the wrong type does not compile; the
// schema (schema.go) and the server's required-field check (Required) are derived from
// the same types.

// MethodSpec describes one declared method for the schema and the server: its params
// and result types and, for streaming methods, the type of each line that follows.
//
// The types are reflect.Types, not values of them: a struct value in an interface is
// an allocation, and every orcr process, each CLI command included, declares ~150
// methods before main (TestDeclareAllocatesNothingPerMethod).
type MethodSpec struct {
	Name        string
	Description string
	Params      reflect.Type
	Result      reflect.Type
	Stream      reflect.Type // nil for unary methods
	// ReadOnly is true for a method that changes nothing (a listing, a read, a wait):
	// the web gateway lets a read-scoped token call these and nothing else. A method
	// not marked counts as one that changes something.
	ReadOnly bool
}

// DeclOption marks a declaration (ReadOnly).
type DeclOption func(*MethodSpec)

// ReadOnly marks a declared method as one that changes nothing.
func ReadOnly(s *MethodSpec) { s.ReadOnly = true }

// Method is a declared request/response method with params P and result R.
type Method[P, R any] struct{ Name string }

// Stream is a declared method whose result is followed by lines of type S on the same
// connection (or, for agent.attach, by a stream in both directions).
type Stream[P, R, S any] struct{ Name string }

// Methods lists every declared method in declaration order (the kernel's, then each
// api package's as Go initialises it). It is filled by Declare and DeclareStream and
// must not be changed after package initialisation.
var Methods = make([]MethodSpec, 0, 256) // room for every method: no copies while they are declared

// Declare declares a unary method; call it once per method, in a package-level var.
func Declare[P, R any](name, desc string, opts ...DeclOption) Method[P, R] {
	mustBeNew(name)
	spec := MethodSpec{Name: name, Description: desc, Params: reflect.TypeFor[P](), Result: reflect.TypeFor[R]()}
	declare(spec, opts)
	return Method[P, R]{Name: name}
}

// DeclareStream declares a streaming method.
func DeclareStream[P, R, S any](name, desc string, opts ...DeclOption) Stream[P, R, S] {
	mustBeNew(name)
	spec := MethodSpec{Name: name, Description: desc, Params: reflect.TypeFor[P](), Result: reflect.TypeFor[R](),
		Stream: reflect.TypeFor[S]()}
	declare(spec, opts)
	return Stream[P, R, S]{Name: name}
}

// declare adds spec to the table and marks it with opts there (marking a local spec
// through an unknown function would move it to the heap: one allocation a method).
func declare(spec MethodSpec, opts []DeclOption) {
	Methods = append(Methods, spec)
	for _, o := range opts {
		o(&Methods[len(Methods)-1])
	}
}

// mustBeNew panics on a second declaration of one name: two packages declaring a
// method would each believe it theirs, and the schema would show one.
func mustBeNew(name string) {
	if _, dup := Lookup(name); dup {
		panic("wire: method " + name + " declared twice")
	}
}

// events are the feature event names the api packages declared (DeclareEvents), listed
// by the schema after the kernel's.
var events []string

// DeclareEvents adds a feature's event names to the schema's list. It returns nothing
// useful; call it as `var _ = wire.DeclareEvents(…)`.
func DeclareEvents(names ...string) struct{} {
	events = append(events, names...)
	return struct{}{}
}

// The API, one declaration per method.
var (
	Ping            = Declare[Empty, PingResult](MethodPing, "Liveness and protocol version.", ReadOnly)
	Info            = Declare[Empty, InfoResult](MethodInfo, "Server facts: pid, home, host and why it was chosen.", ReadOnly)
	AgentRun        = Declare[RunParams, AgentResult](MethodAgentRun, "Spawn an agent (queued, then admitted).")
	AgentList       = Declare[ListParams, ListResult](MethodAgentList, "List agents matching a glob.", ReadOnly)
	AgentGet        = Declare[TargetParams, AgentResult](MethodAgentGet, "One agent by id, id prefix or path.", ReadOnly)
	AgentSend       = Declare[SendParams, Empty](MethodAgentSend, "Type text and/or press named keys.")
	AgentAnswer     = Declare[AnswerParams, AnswerResult](MethodAgentAnswer, "Answer what a blocked agent waits for, by the options it shows.")
	AgentRead       = Declare[ReadParams, ReadResult](MethodAgentRead, "Screen text, last message or transcript.", ReadOnly)
	AgentWait       = Declare[WaitParams, WaitResult](MethodAgentWait, "Wait until every matching agent reaches a state.", ReadOnly)
	AgentKill       = Declare[KillParams, KillResult](MethodAgentKill, "Stop every running agent matching a glob.")
	AgentResize     = Declare[ResizeParams, Empty](MethodAgentResize, "Resize an agent's pane.")
	AgentAttach     = DeclareStream[AttachParams, AttachResult, AttachFrame](MethodAgentAttach, "Attach: a native command, or an AttachFrame stream on this connection.")
	EventsSubscribe = DeclareStream[SubscribeParams, SubscribeResult, Event](MethodEventsSubscribe, "Stream events after a cursor on this connection.", ReadOnly)
	HookReport      = Declare[HookParams, Empty](MethodHookReport, "A provider hook report from inside an agent.")
	QueueGet        = Declare[Empty, QueueResult](MethodQueue, "The admission queue against its caps.", ReadOnly)
	UsageGet        = Declare[UsageParams, UsageResult](MethodUsage, "Tokens and cost by provider, model and window.", ReadOnly)
	QueueCaps       = Declare[CapsParams, QueueResult](MethodQueueCaps, "Change admission caps at runtime; absent fields keep their value.")
	QueuePriority   = Declare[PriorityParams, AgentResult](MethodQueuePriority, "Change a queued agent's priority (to N, or by ±N); the queue re-sorts at once.")
	GCRun           = Declare[GCParams, GCResult](MethodGC, "Run lifecycle GC now (or say what it would do).")
	AgentResume     = Declare[ResumeParams, AgentResult](MethodAgentResume, "Resume an ended or hibernated agent through its provider's session: a new record linked to the old.")
)

// Lookup returns the spec of a declared method by name.
func Lookup(name string) (MethodSpec, bool) {
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
