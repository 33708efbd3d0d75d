package wire

import (
	"encoding/json"
	"reflect"
	"time"
)

// Schema returns the JSON Schema (draft 2020-12) of every declared method and event:
// the kernel's and those of the api packages linked into the program.
func Schema() map[string]any {
	defs := map[string]any{}
	methods := map[string]any{}
	for _, m := range Methods {
		spec := map[string]any{
			"description": m.Description,
			"params":      schemaOf(m.Params, defs),
			"result":      schemaOf(m.Result, defs),
		}
		if m.ReadOnly {
			spec["readOnly"] = true
		}
		if m.Stream != nil {
			spec["stream"] = schemaOf(m.Stream, defs)
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
		"events":      allEvents(),
		"errorCodes":  ErrorCodes,
		// What a blocked agent's Blocked.kind can be.
		"blockedKinds": BlockedKinds,
		"$defs":        defs,
	}
}

// kernelEvents are the kernel's events as the schema lists them; each feature's
// follow (DeclareEvents).
var kernelEvents = []string{EventAgentSpawned, EventAgentState, EventAgentUpdated, EventAgentKilled, EventAgentRemoved, EventAgentScreen,
	EventGCCollected, EventEventsPruned, EventHookRan}

func allEvents() []string {
	return append(append([]string{}, kernelEvents...), events...)
}

// ErrorCodes lists every stable error code.
var ErrorCodes = []string{CodeBadRequest, CodeLineTooLong, CodeUnknownMethod, CodeInvalidParams, CodeInvalidPath,
	CodeInvalidGlob, CodePathTaken, CodeNotFound, CodeAmbiguous, CodeNotRunning, CodeUnknownProvider,
	CodeMissingProgram, CodeCallerRefused, CodePermission, CodeHostError, CodeTimeout, CodeVersionMismatch,
	CodeInternal, CodeUnavailable, CodeShuttingDown, CodeNameTaken,
	CodeNotBlocked, CodeNotAnswerable, CodeNoSuchOption, CodeOptionRange, CodeSeveralBlocked, CodePromptGone, CodeAnswerNotTaken, CodeAgentBlocked,
	CodeUnknownRole, CodeBadRole, CodeNoSession,
	CodeNotARepo, CodeNotAllowed, CodePlanInvalid, CodeNotQueued, CodeHasChildren,
	CodeStoreUnavailable, CodeTooManyConnections}

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
			for _, f := range fields(t) {
				prop := schemaOf(f.Type, defs)
				if lo, hi, ok := fieldRange(t.Field(f.Index)); ok {
					num := prop
					if alt, ok := prop["anyOf"].([]any); ok { // a pointer: the value or null
						num, _ = alt[0].(map[string]any)
					}
					if num["type"] == "integer" || num["type"] == "number" {
						num["minimum"], num["maximum"] = lo, hi
					}
				}
				if n, ok := fieldMaxItems(t.Field(f.Index)); ok {
					switch f.Type.Kind() {
					case reflect.Slice:
						prop["maxItems"] = n
					case reflect.Map:
						prop["maxProperties"] = n
					}
				}
				props[f.Name] = prop
				if f.Required {
					required = append(required, f.Name)
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

// ParamsSchema is the JSON Schema of one method's params as a document of its own: the
// params object at the root (type object), the types it refers to under its $defs. An
// MCP tool's input schema is this (mcp/), from the same declaration as `orcr api schema`.
func ParamsSchema(spec MethodSpec) map[string]any {
	defs := map[string]any{}
	root := schemaOf(spec.Params, defs)
	ref, _ := root["$ref"].(string)
	name := ref[len("#/$defs/"):]
	doc := map[string]any{}
	if d, ok := defs[name].(map[string]any); ok {
		for k, v := range d {
			doc[k] = v
		}
	}
	delete(defs, name)
	if len(defs) > 0 {
		doc["$defs"] = defs
	}
	return doc
}
