package fast

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Agent is the part of an agent record (orcr/core/wire.Agent, as the server sends it)
// that `orcr agent get` prints. It is decoded from the server's JSON here, and the full
// command line hands its wire.Agent over as JSON too, so WriteAgent is the one printer
// of the command on both paths. Each field's JSON name is wire.Agent's (the cli tests
// check that every field decodes from a wire.Agent and back).
type Agent struct {
	ID          string      `json:"id"`
	Path        string      `json:"path"`
	ParentID    string      `json:"parentId"`
	ParentPath  string      `json:"parentPath"`
	Provider    string      `json:"provider"`
	Model       string      `json:"model"`
	Argv        []string    `json:"argv"`
	Cwd         string      `json:"cwd"`
	Prompt      string      `json:"prompt"`
	Role        string      `json:"role"`
	RoleNotes   []string    `json:"roleNotes"`
	Limits      AgentLimits `json:"limits"`
	Hooks       []HookRun   `json:"hooks"`
	ResumedFrom string      `json:"resumedFrom"`
	Identity    string      `json:"identity"`
	Spawn       *Spawn      `json:"spawn"`
	Sandbox     *Sandbox    `json:"sandbox"`
	State       string      `json:"state"`
	StateSource string      `json:"stateSource"`
	StateReason string      `json:"stateReason"`
	Blocked     *Blocked    `json:"blocked"`
	Host        string      `json:"host"`
	PaneID      string      `json:"paneId"`
	PID         int         `json:"pid"`
	ExitCode    *int        `json:"exitCode"`
	Error       string      `json:"error"`
	SessionID   string      `json:"sessionId"`
	Transcript  string      `json:"transcript"`
	Usage       Usage       `json:"usage"`
	CreatedAt   time.Time   `json:"createdAt"`
	StateAt     time.Time   `json:"stateAt"`
}

// AgentLimits is wire.AgentLimits as agent get prints it.
type AgentLimits struct {
	MaxTurns           int        `json:"maxTurns"`
	SoftTimeoutSeconds int        `json:"softTimeoutSeconds"`
	HardTimeoutSeconds int        `json:"hardTimeoutSeconds"`
	BudgetUSD          float64    `json:"budgetUsd"`
	Turns              int        `json:"turns"`
	WrapUpAt           *time.Time `json:"wrapUpAt"`
}

// HookRun is wire.HookRun as agent get prints it.
type HookRun struct {
	Hook     string  `json:"hook"`
	Attempt  int     `json:"attempt"`
	Seconds  float64 `json:"seconds"`
	ExitCode *int    `json:"exitCode"`
	Result   string  `json:"result"`
	Output   string  `json:"output"`
}

// Spawn is wire.SpawnPolicy.
type Spawn struct {
	MaxChildren *int     `json:"maxChildren,omitempty"`
	MaxDepth    *int     `json:"maxDepth,omitempty"`
	Providers   []string `json:"providers,omitempty"`
	Roles       []string `json:"roles,omitempty"`
	BudgetUSD   *float64 `json:"budgetUsd,omitempty"`
}

// Sandbox is wire.Sandbox's mode.
type Sandbox struct {
	Mode string `json:"mode"`
}

// Blocked is wire.Blocked.
type Blocked struct {
	Kind     string     `json:"kind"`
	Detail   string     `json:"detail"`
	Question string     `json:"question"`
	Text     string     `json:"text"`
	Options  []Option   `json:"options"`
	ResetsAt *time.Time `json:"resetsAt"`
}

// Option is wire.Option.
type Option struct {
	Label   string `json:"label"`
	Key     string `json:"key"`
	Meaning string `json:"meaning"`
	Text    bool   `json:"text,omitempty"`
}

// UnmarshalJSON also reads the plain strings older records stored as options
// (wire.Option's UnmarshalJSON is this one).
func (o *Option) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*o = Option{Label: s, Meaning: "other"}
		return nil
	}
	type plain Option
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*o = Option(p)
	return nil
}

// Usage is wire.Usage.
type Usage struct {
	InputTokens      int64    `json:"inputTokens"`
	OutputTokens     int64    `json:"outputTokens"`
	CacheReadTokens  int64    `json:"cacheReadTokens"`
	CacheWriteTokens int64    `json:"cacheWriteTokens"`
	CostUSD          *float64 `json:"costUsd"`
}

// WriteAgent prints `orcr agent get`'s text for a: one aligned "key: value" row per
// field that has a value; explain adds why the state is what it is and how the role
// resolved (`--explain`).
func WriteAgent(w io.Writer, a *Agent, explain bool) {
	tw := &table{w: w}
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", k, v)
		}
	}
	row("id", a.ID)
	row("path", a.Path)
	row("state", a.State+ExitSuffix(a.ExitCode))
	if b := a.Blocked; b != nil {
		s := b.Kind + ": " + b.Detail
		if b.ResetsAt != nil {
			s += " (resets " + b.ResetsAt.Format("15:04 MST") + ")"
		}
		row("blocked", s)
		for _, l := range blockedLines(b) {
			fmt.Fprintf(tw, "\t%s\n", l)
		}
	}
	if explain {
		row("decided by", a.StateSource)
		row("because", a.StateReason)
		row("since", a.StateAt.Format(time.RFC3339))
	}
	row("provider", a.Provider)
	row("model", a.Model)
	roleRows(tw, a, explain)
	row("identity", a.Identity)
	if !a.Spawn.empty() {
		row("spawn", a.Spawn.String())
	}
	row("prompt", promptLine(a.Prompt))
	row("parent", strings.TrimSpace(a.ParentPath+" "+a.ParentID))
	row("argv", strings.Join(a.Argv, " "))
	row("cwd", a.Cwd)
	if a.Sandbox != nil {
		row("sandbox", a.Sandbox.Mode)
	}
	row("host", strings.TrimSpace(a.Host+" "+a.PaneID))
	if a.PID > 0 {
		row("pid", fmt.Sprint(a.PID))
	}
	row("tokens", FormatTokens(a.Usage))
	row("cost", FormatCost(a.Usage))
	row("session", a.SessionID)
	row("transcript", a.Transcript)
	row("error", a.Error)
	row("created", a.CreatedAt.Format(time.RFC3339))
	tw.Flush()
}

// WriteTable prints display rows (wire.Table: `orcr agent ls`'s) with aligned columns.
func WriteTable(w io.Writer, columns []string, rows [][]string) {
	tw := &table{w: w}
	tw.Write([]byte(strings.Join(columns, "\t") + "\n"))
	for _, r := range rows {
		tw.Write([]byte(strings.Join(r, "\t") + "\n"))
	}
	tw.Flush()
}

// ExitSuffix is " (exit N)" for an exit code, "" for none (core.ExitSuffix).
func ExitSuffix(code *int) string {
	if code != nil {
		return fmt.Sprintf(" (exit %d)", *code)
	}
	return ""
}

// blockedLines are a blocked agent's prompt under its "blocked" row: the question and
// the text when they say more than the detail, then the options.
func blockedLines(b *Blocked) []string {
	var out []string
	if b.Question != "" && b.Question != b.Detail {
		out = append(out, b.Question)
	}
	if b.Text != "" && b.Text != b.Question && b.Text != b.Detail {
		out = append(out, strings.Split(b.Text, "\n")...)
	}
	if len(b.Options) > 0 {
		out = append(out, strings.Split(FormatOptions(b.Options), "\n")...)
	}
	return out
}

// FormatOptions lists options one per line as "  1. Yes  [key 1, allow_once]"
// (wire.FormatOptions).
func FormatOptions(opts []Option) string {
	var b strings.Builder
	for i, o := range opts {
		fmt.Fprintf(&b, "  %d. %s  [key %s, %s]\n", i+1, o.Label, o.Key, o.Meaning)
	}
	return strings.TrimRight(b.String(), "\n")
}

// roleRows are the lines for the role, limits and hook runs.
func roleRows(w io.Writer, a *Agent, explain bool) {
	if a.Role != "" {
		fmt.Fprintf(w, "role:\t%s\n", a.Role)
	}
	if explain {
		for _, n := range a.RoleNotes {
			fmt.Fprintf(w, "\t%s\n", n)
		}
	}
	if l := a.Limits; l.MaxTurns > 0 || l.SoftTimeoutSeconds > 0 || l.HardTimeoutSeconds > 0 || l.BudgetUSD > 0 {
		var parts []string
		if l.MaxTurns > 0 {
			parts = append(parts, fmt.Sprintf("turns %d/%d", l.Turns, l.MaxTurns))
		}
		if l.SoftTimeoutSeconds > 0 {
			s := "soft " + ShortDur(l.SoftTimeoutSeconds)
			if l.WrapUpAt != nil {
				s += " (wrap-up sent " + l.WrapUpAt.Format("15:04:05") + ")"
			}
			parts = append(parts, s)
		}
		if l.HardTimeoutSeconds > 0 {
			parts = append(parts, "hard "+ShortDur(l.HardTimeoutSeconds))
		}
		if l.BudgetUSD > 0 {
			parts = append(parts, fmt.Sprintf("budget $%g", l.BudgetUSD))
		}
		fmt.Fprintf(w, "limits:\t%s\n", strings.Join(parts, ", "))
	}
	if a.ResumedFrom != "" {
		fmt.Fprintf(w, "resumed from:\t%s\n", a.ResumedFrom)
	}
	for _, h := range a.Hooks {
		code := ""
		if h.ExitCode != nil {
			code = fmt.Sprintf(" exit %d", *h.ExitCode)
		}
		fmt.Fprintf(w, "hook:\t%s.sh #%d %s%s (%.1fs)\n", h.Hook, h.Attempt, h.Result, code, h.Seconds)
		if explain && h.Result != "passed" {
			for _, l := range strings.Split(strings.TrimSpace(h.Output), "\n") {
				fmt.Fprintf(w, "\t  %s\n", l)
			}
		}
	}
}

// ShortDur is a number of seconds as a duration without its zero tail: 90m, 1h30m, 45s.
func ShortDur(secs int) string {
	s := (time.Duration(secs) * time.Second).String()
	s = strings.TrimSuffix(s, "0s")
	return strings.TrimSuffix(s, "0m")
}

// promptLine is a prompt on one line of `agent get`: quoted when it holds a newline or
// a tab, cut at 200 characters (--json has it whole).
func promptLine(p string) string {
	if r := []rune(p); len(r) > 200 {
		p = string(r[:200]) + "…"
	}
	if strings.ContainsAny(p, "\n\r\t") {
		p = strconv.Quote(p)
	}
	return p
}

func (sp *Spawn) empty() bool {
	return sp == nil || sp.MaxChildren == nil && sp.MaxDepth == nil && len(sp.Providers) == 0 && len(sp.Roles) == 0 && sp.BudgetUSD == nil
}

// String is the policy as a role file writes it (wire.SpawnPolicy.String).
func (sp *Spawn) String() string {
	if sp.empty() {
		return "none"
	}
	var parts []string
	if sp.MaxChildren != nil {
		parts = append(parts, fmt.Sprintf("max_children = %d", *sp.MaxChildren))
	}
	if sp.MaxDepth != nil {
		parts = append(parts, fmt.Sprintf("max_depth = %d", *sp.MaxDepth))
	}
	if len(sp.Providers) > 0 {
		parts = append(parts, fmt.Sprintf("providers = [%s]", strings.Join(sp.Providers, ", ")))
	}
	if len(sp.Roles) > 0 {
		parts = append(parts, fmt.Sprintf("roles = [%s]", strings.Join(sp.Roles, ", ")))
	}
	if sp.BudgetUSD != nil {
		parts = append(parts, fmt.Sprintf("budget_usd = %.2f", *sp.BudgetUSD))
	}
	return strings.Join(parts, ", ")
}

// FormatTokens is "in/out" with input including cache reads and writes, or "-"
// (core.FormatTokens).
func FormatTokens(u Usage) string {
	in, out := u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens, u.OutputTokens
	if in+out <= 0 {
		return "-"
	}
	var b [16]byte
	return string(AppendCount(append(AppendCount(b[:0], in), '/'), out))
}

// FormatCost is one agent's cost: "$0.12", "unpriced" for tokens of a model with no
// price, "-" when it used no tokens (core.FormatCost).
func FormatCost(u Usage) string {
	used := u.InputTokens+u.CacheReadTokens+u.CacheWriteTokens+u.OutputTokens > 0
	switch {
	case u.CostUSD != nil && (used || *u.CostUSD > 0):
		usd := *u.CostUSD
		if math.Abs(usd) < 0.005 {
			usd = 0 // no "-0.00"
		}
		prec := 2
		if usd >= 100 {
			prec = 0
		}
		return "$" + strconv.FormatFloat(usd, 'f', prec, 64)
	case used:
		return "unpriced"
	}
	return "-"
}

// AppendCount appends a count in at most four characters: 950, 9.5k, 26k, 1.2M
// (core.HumanCount, which is this).
func AppendCount(dst []byte, n int64) []byte {
	f := float64(n)
	scaled := func(div float64, prec int, unit byte) []byte {
		return append(strconv.AppendFloat(dst, f/div, 'f', prec, 64), unit)
	}
	switch {
	case n < 1000:
		return strconv.AppendInt(dst, n, 10)
	case n < 9_950:
		return scaled(1e3, 1, 'k')
	case n < 999_500:
		return scaled(1e3, 0, 'k')
	case n < 9_950_000:
		return scaled(1e6, 1, 'M')
	case n < 999_500_000:
		return scaled(1e6, 0, 'M')
	case n < 9_950_000_000:
		return scaled(1e9, 1, 'G')
	}
	return scaled(1e9, 0, 'G')
}
