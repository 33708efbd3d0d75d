package early

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// fromStd is v as encoding/json reads it, numbers as their text (jsonNumber).
func fromStd(b []byte) (any, error) {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, err
	}
	d := json.NewDecoder(strings.NewReader(string(b)))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return convert(v), nil
}

func convert(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = convert(e)
		}
	case []any:
		for i, e := range x {
			x[i] = convert(e)
		}
	case json.Number:
		return jsonNumber(x)
	}
	return v
}

var jsonSeeds = []string{
	`{"id":"1","result":{"agent":{"id":"01a2","path":"a/b","state":"queued","roleNotes":["warning: x","y"]}}}`,
	`{"id":"1","error":{"code":"missing_program","message":"no \"x\" here\n"}}`,
	` [1, -2.5e+3, 0, 0.25, true, false, null, "\u00e9\ud83d\ude00\ud800x\udc00", {}, [], {"a":{"b":[{}]}}] `,
	`"\/\b\f\n\r\t\\"`, `{"a":1,"a":2}`, "\"\xff\xfe\"", `{"a" : [ 1 , 2 ] }`,
	`{`, `[1,]`, `{"a":}`, `01`, `-`, `1.`, `1e`, `"\x"`, `"\u12"`, "\"a\x01\"", `tru`, `nul`, `{"a":1}x`, `[1 2]`, ``,
}

func FuzzParseJSON(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, werr := fromStd(b)
		got, gerr := parseJSON(b)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("%q: encoding/json err %v, parseJSON err %v", b, werr, gerr)
		}
		if werr == nil && !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: parseJSON %#v, encoding/json %#v", b, got, want)
		}
	})
}

// TestRunRequest checks the hand-written request against encoding/json's reading of
// the same params, for params with every field and for strings that need escapes.
func TestRunRequest(t *testing.T) {
	for _, p := range []RunParams{
		{Path: "a/b"},
		{Path: "a/b", Argv: []string{"sh", "-c", "echo \"hi\"\n\t\\ \x01\x7f <&> é 😀"}, Cwd: "/tmp/x y"},
		{Path: "p", Provider: "claude", Model: "m", Cwd: "/", Env: map[string]string{"B": "2", "A": "1=x"}, Prompt: "two\nlines",
			Priority: -7, Keep: true, Worktree: "w", Role: "r", Vars: map[string]string{"k": "v"}, Account: "acc", Identity: "i", MCP: "self"},
	} {
		for _, caller := range []string{"", "01a2-caller"} {
			b, ok := runRequest(&p, caller)
			if !ok || !strings.HasSuffix(string(b), "}\n") {
				t.Fatalf("%+v: %q ok %v", p, b, ok)
			}
			var got struct {
				ID      string          `json:"id"`
				Method  string          `json:"method"`
				Params  json.RawMessage `json:"params"`
				Caller  string          `json:"caller"`
				Version int             `json:"version"`
			}
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatalf("%q: %v", b, err)
			}
			params, _ := json.Marshal(p)
			var x, y any
			_ = json.Unmarshal(got.Params, &x)
			_ = json.Unmarshal(params, &y)
			if got.ID != "1" || got.Method != "agent.run" || got.Caller != caller || got.Version != ProtocolVersion || !reflect.DeepEqual(x, y) {
				t.Errorf("request %s\nwant params %s caller %q", b, params, caller)
			}
		}
	}
	if _, ok := runRequest(&RunParams{Path: "a", Argv: []string{"\xff"}}, ""); ok {
		t.Error("a string that is not UTF-8 was written")
	}
}
