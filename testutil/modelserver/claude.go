package modelserver

import (
	"encoding/json"
	"regexp"
	"strings"
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
	for _, raw := range claudePromptParts(r) {
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

// claudePromptParts is a claude request's system prompt and its messages, where claude
// names its plan file and working directory; nil for a body it cannot read.
func claudePromptParts(r Request) []json.RawMessage {
	var body struct {
		System   json.RawMessage `json:"system"`
		Messages json.RawMessage `json:"messages"`
	}
	if json.Unmarshal(r.Body, &body) != nil {
		return nil
	}
	return []json.RawMessage{body.System, body.Messages}
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

var cwdRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`Primary working directory: ([^\s"\\]+)`)
})

// ClaudeCwd is the working directory claude 2.1.x names in its environment notes
// ("Primary working directory: <path>", in the system prompt or, in 2.1.328, a
// system message), "" when the request names none: the key to route the requests of
// several claude agents sharing one server (Route).
func ClaudeCwd(r Request) string {
	for _, raw := range claudePromptParts(r) {
		if m := cwdRE().FindSubmatch(raw); m != nil {
			return string(m[1])
		}
	}
	return ""
}

// LastUser is the text of the last user message of a request, of the Messages API
// ("messages": claude, pi, opencode) or the Responses API ("input": codex): typed
// text, text blocks and the content of tool results (what the CLI sent back after
// running a tool), one per line, without the <system-reminder> blocks claude adds of
// its own. Tests look in it for what orcr typed or sent.
func (r Request) LastUser() string {
	var body struct {
		Messages []message       `json:"messages"`
		Input    json.RawMessage `json:"input"`
	}
	if r.JSON(&body) != nil {
		return ""
	}
	msgs := body.Messages
	if len(msgs) == 0 && len(body.Input) > 0 {
		_ = json.Unmarshal(body.Input, &msgs)
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if m := msgs[i]; m.Role == "user" {
			return contentText(m.Content)
		}
	}
	return ""
}

// message is one message of a request's conversation.
type message struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// contentText flattens a message's content (a string or blocks) into its text.
func contentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type    string          `json:"type"`
		Text    string          `json:"text"`
		Content json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(raw, &blocks)
	var out []string
	for _, b := range blocks {
		switch b.Type {
		case "text", "input_text":
			if !strings.HasPrefix(b.Text, "<system-reminder>") {
				out = append(out, b.Text)
			}
		case "tool_result":
			if len(b.Content) > 0 {
				out = append(out, contentText(b.Content))
			}
		}
	}
	return strings.Join(out, "\n")
}
