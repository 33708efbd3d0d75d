package modelserver

import (
	"encoding/json"
	"regexp"
	"sync"
)

var planFileRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?:create your plan at|plan file (?:exists )?at) (/[^\s]+?\.md)`)
})

// ClaudePlanFile is the plan file claude 2.1.x names in its system prompt while in plan
// mode ("You should create your plan at <path> using the Write tool"); its
// ExitPlanMode tool takes no arguments and shows that file for approval. It returns ""
// when the request names none.
func ClaudePlanFile(r Request) string {
	var body struct {
		System   json.RawMessage `json:"system"`
		Messages json.RawMessage `json:"messages"`
	}
	if json.Unmarshal(r.Body, &body) != nil {
		return ""
	}
	for _, raw := range []json.RawMessage{body.System, body.Messages} {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			s = string(raw)
		}
		if m := planFileRE().FindStringSubmatch(s); m != nil {
			return m[1]
		}
	}
	return ""
}

// ClaudePlan is a turn that writes plan to the plan file named in the request and
// asks for approval (ExitPlanMode), as claude's plan mode does.
func ClaudePlan(plan string, u Usage) Turn {
	return Turn{Build: func(r Request) Turn {
		path := ClaudePlanFile(r)
		if path == "" {
			return Turn{Text: "no plan file was named in plan mode", Usage: u}
		}
		return Turn{ToolCalls: []ToolCall{{Name: "Write", Input: map[string]any{"file_path": path, "content": plan}}}, Usage: u}
	}}
}

// ClaudeExitPlan asks claude to leave plan mode with the plan it wrote.
func ClaudeExitPlan(u Usage) Turn {
	return Turn{ToolCalls: []ToolCall{{Name: "ExitPlanMode", Input: map[string]any{}}}, Usage: u}
}
