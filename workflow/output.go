package workflow

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
)

// Validate checks a step's output file text against its declared outputs: one JSON
// object with every declared field, each of its type. It returns the declared fields
// (others are dropped: nothing can read them), numbers as float64 as the store gives
// them back.
func Validate(text string, outputs map[string]string) (map[string]any, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("the output file is empty")
		}
		return nil, fmt.Errorf("the output is not JSON: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("the output has more than one JSON value")
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the output is %s, not a JSON object", typeName(v))
	}
	var problems []string
	out := map[string]any{}
	for _, name := range sortedKeys(outputs) {
		want := outputs[name]
		got, ok := obj[name]
		if !ok {
			problems = append(problems, name+" is missing")
			continue
		}
		if !isType(got, want) {
			problems = append(problems, fmt.Sprintf("%s is %s, want %s", name, typeName(got), want))
			continue
		}
		out[name] = plain(got)
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "; "))
	}
	return out, nil
}

func isType(v any, want string) bool {
	switch want {
	case "string":
		_, ok := v.(string)
		return ok
	case "bool":
		_, ok := v.(bool)
		return ok
	case "list":
		_, ok := v.([]any)
		return ok
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "float":
		_, ok := v.(json.Number)
		return ok
	case "int":
		n, ok := v.(json.Number)
		if !ok {
			return false
		}
		if _, err := n.Int64(); err == nil {
			return true
		}
		f, err := n.Float64()
		return err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53
	}
	return false
}

// plain turns json.Numbers into float64, all the way down.
func plain(v any) any {
	switch x := v.(type) {
	case json.Number:
		f, _ := x.Float64()
		return f
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = plain(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = plain(e)
		}
		return out
	}
	return v
}

// typeName names a JSON value's type as the workflow file does.
func typeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a bool"
	case json.Number:
		if _, err := x.Int64(); err == nil {
			return "an int"
		}
		return "a float"
	case float64, float32:
		return "a number"
	case int, int64, int32, uint, uint64:
		return "an int"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}

// text is a value as a template writes it: a string as itself, anything else as JSON.
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// fieldList writes a step's outputs for a prompt: "count (int), issues (list)".
func fieldList(outputs map[string]string) string {
	var parts []string
	for _, k := range sortedKeys(outputs) {
		parts = append(parts, k+" ("+outputs[k]+")")
	}
	if len(parts) == 1 {
		return "the field " + parts[0]
	}
	return "the fields " + strings.Join(parts, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
