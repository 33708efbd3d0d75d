package wire

import (
	"encoding/json"
	"reflect"
	"strings"
	"time"
)

// MethodSpec describes one method of the socket API: its params and result types and,
// for streaming methods, the type of each line that follows the result.
type MethodSpec struct {
	Name        string
	Description string
	Params      any
	Result      any
	Stream      any // nil for unary methods
}

// Methods is the API. The socket server decodes params into exactly these types and
// the schema is generated from them, so the two cannot drift apart.
var Methods = []MethodSpec{
	{MethodPing, "Liveness and protocol version.", Empty{}, PingResult{}, nil},
	{MethodInfo, "Server facts: pid, home, host and why it was chosen.", Empty{}, InfoResult{}, nil},
	{MethodAgentRun, "Spawn an agent (queued, then admitted).", RunParams{}, AgentResult{}, nil},
	{MethodAgentList, "List agents matching a glob.", ListParams{}, ListResult{}, nil},
	{MethodAgentGet, "One agent by id, id prefix or path.", TargetParams{}, AgentResult{}, nil},
	{MethodAgentSend, "Type text and/or press named keys.", SendParams{}, Empty{}, nil},
	{MethodAgentRead, "Screen text, last message or transcript.", ReadParams{}, ReadResult{}, nil},
	{MethodAgentWait, "Wait until every matching agent reaches a state.", WaitParams{}, WaitResult{}, nil},
	{MethodAgentKill, "Stop every running agent matching a glob.", KillParams{}, KillResult{}, nil},
	{MethodAgentAnswer, "Answer what a blocked agent waits for: an option by meaning or number, or text.", AnswerParams{}, AnswerResult{}, nil},
	{MethodAgentResize, "Resize an agent's pane.", ResizeParams{}, Empty{}, nil},
	{MethodAgentAttach, "Attach: a native command, or an AttachFrame stream on this connection.", AttachParams{}, AttachResult{}, AttachFrame{}},
	{MethodEventsSubscribe, "Stream events after a cursor on this connection.", SubscribeParams{}, SubscribeResult{}, Event{}},
	{MethodHookReport, "A provider hook report from inside an agent.", HookParams{}, Empty{}, nil},
	{MethodQueue, "The admission queue against its caps.", Empty{}, QueueResult{}, nil},
	{MethodUsage, "Tokens and cost by provider, model and window.", UsageParams{}, UsageResult{}, nil},
	{MethodScheduleList, "Durable schedules.", Empty{}, ScheduleListResult{}, nil},
	{MethodQueueCaps, "Change admission caps at runtime; absent fields keep their value.", CapsParams{}, QueueResult{}, nil},
	{MethodGC, "Run lifecycle GC now (or say what it would do).", GCParams{}, GCResult{}, nil},
	{MethodScheduleAdd, "Create a durable schedule.", ScheduleAddParams{}, ScheduleResult{}, nil},
	{MethodScheduleRemove, "Remove a schedule and its run history.", ScheduleNameParams{}, Empty{}, nil},
	{MethodScheduleRun, "Run a schedule now.", ScheduleRunParams{}, ScheduleRunResult{}, nil},
	{MethodScheduleRuns, "A schedule's run history, oldest first.", ScheduleNameParams{}, ScheduleRunsResult{}, nil},
}

// Method returns the spec of a method by name.
func Method(name string) (MethodSpec, bool) {
	for _, m := range Methods {
		if m.Name == name {
			return m, true
		}
	}
	return MethodSpec{}, false
}

// Schema returns the JSON Schema (draft 2020-12) of every method and event.
func Schema() map[string]any {
	defs := map[string]any{}
	methods := map[string]any{}
	for _, m := range Methods {
		spec := map[string]any{
			"description": m.Description,
			"params":      schemaOf(reflect.TypeOf(m.Params), defs),
			"result":      schemaOf(reflect.TypeOf(m.Result), defs),
		}
		if m.Stream != nil {
			spec["stream"] = schemaOf(reflect.TypeOf(m.Stream), defs)
		}
		methods[m.Name] = spec
	}
	return map[string]any{
		"$schema":     "https://json-schema.org/draft/2020-12/schema",
		"title":       "orcr socket API",
		"version":     Version,
		"description": "Newline-delimited JSON over $ORCR_HOME/orcr.sock. Each request is {id, method, params, caller?, version?}; each response {id, result} or {id, error:{code,message}}.",
		"request":     schemaOf(reflect.TypeOf(Request{}), defs),
		"response":    schemaOf(reflect.TypeOf(Response{}), defs),
		"methods":     methods,
		"events": []string{EventAgentSpawned, EventAgentState, EventAgentUpdated, EventAgentKilled, EventAgentRemoved, EventAgentScreen,
			EventGCCollected, EventEventsPruned, EventScheduleFired, EventScheduleFinished, EventScheduleMissed},
		"errorCodes": ErrorCodes,
		"$defs":      defs,
	}
}

// ErrorCodes lists every stable error code.
var ErrorCodes = []string{CodeBadRequest, CodeLineTooLong, CodeUnknownMethod, CodeInvalidParams, CodeInvalidPath,
	CodeInvalidGlob, CodePathTaken, CodeNotFound, CodeAmbiguous, CodeNotRunning, CodeUnknownProvider,
	CodeMissingProgram, CodeCallerRefused, CodePermission, CodeHostError, CodeTimeout, CodeVersionMismatch,
	CodeInternal, CodeUnavailable, CodeShuttingDown, CodeNameTaken,
	CodeNotBlocked, CodeNotAnswerable, CodeNoSuchOption, CodeOptionRange, CodeSeveralBlocked, CodePromptGone, CodeAnswerNotTaken}

var (
	timeType = reflect.TypeOf(time.Time{})
	rawType  = reflect.TypeOf(json.RawMessage{})
)

func schemaOf(t reflect.Type, defs map[string]any) map[string]any {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == rawType:
		return map[string]any{}
	}
	switch t.Kind() {
	case reflect.Pointer:
		inner := schemaOf(t.Elem(), defs)
		return map[string]any{"anyOf": []any{inner, map[string]any{"type": "null"}}}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "contentEncoding": "base64"}
		}
		return map[string]any{"type": []string{"array", "null"}, "items": schemaOf(t.Elem(), defs)}
	case reflect.Map:
		return map[string]any{"type": []string{"object", "null"}, "additionalProperties": schemaOf(t.Elem(), defs)}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		name := t.Name()
		if _, ok := defs[name]; !ok {
			defs[name] = nil // break cycles
			props := map[string]any{}
			var required []string
			for i := 0; i < t.NumField(); i++ {
				f := t.Field(i)
				if !f.IsExported() {
					continue
				}
				tag := f.Tag.Get("json")
				if tag == "-" {
					continue
				}
				jname, opts, _ := strings.Cut(tag, ",")
				if jname == "" {
					jname = f.Name
				}
				props[jname] = schemaOf(f.Type, defs)
				if !strings.Contains(opts, "omitempty") && f.Type.Kind() != reflect.Pointer {
					required = append(required, jname)
				}
			}
			d := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
			if len(required) > 0 {
				d["required"] = required
			}
			defs[name] = d
		}
		return map[string]any{"$ref": "#/$defs/" + name}
	}
	return map[string]any{}
}
