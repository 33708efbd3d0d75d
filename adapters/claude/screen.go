package claude

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"sync"
	"time"

	"orcr/adapters/internal/agentkit"
	"orcr/core"
	"orcr/core/wire"
)

// dialogRule recognizes a startup dialog claude shows before it takes a prompt.
type dialogRule struct {
	name string // what the dialog asks, as shown in "blocked: dialog: …"
	all  []string
	// fix, for a setup screen (kind setup): what the user must do, outside orcr or
	// inside the pane, before claude can work; "%s" is the config dir's assignment.
	fix string
}

// dialogs are claude's startup dialogs (2.1.x wording). orcr pre-accepts the trust
// dialog; the rest are reported so nobody waits on a dialog nobody sees. Their options
// are read from the menu on screen. The setup screens (first-run onboarding, sign-in,
// no connection) are not a question orcr can answer for the user: they are kind setup
// and say what to do.
var dialogs = []dialogRule{
	{name: "trust folder", all: []string{"Yes, I trust this folder"}},
	{name: "trust folder", all: []string{"Do you trust the files in this folder"}},
	{name: "use API key", all: []string{"Do you want to use this API key"}},
	{name: "bypass permissions warning", all: []string{"Bypass Permissions mode", "Yes, I accept"}},
	{name: "onboarding", all: []string{"Choose the text style"},
		fix: "claude's first-run setup is not done: finish it in the pane (orcr agent attach), or run `%sclaude` once by hand, then run the agent again"},
	{name: "not signed in", all: []string{"Select login method"},
		fix: "claude is not signed in: run `%sclaude /login` (or set ANTHROPIC_API_KEY), then orcr agent kill this agent and run it again; or sign in inside it with orcr agent attach"},
	{name: "not signed in", all: []string{"Not logged in · Please run /login"}, fix: signInAgain},
	{name: "not signed in", all: []string{"Not logged in · run /login"}, fix: signInAgain},
	{name: "no connection", all: []string{"Unable to connect to Anthropic services"},
		fix: "claude cannot reach its API: check the network (or set ANTHROPIC_BASE_URL), then orcr agent kill this agent and run it again"},
}

// signInAgain is the fix when a message was refused for want of a login.
const signInAgain = "claude is not signed in: run `%sclaude /login` (or set ANTHROPIC_API_KEY), then send the message again"

// setupFix fills a setup fix with the agent's config dir, so the command it names
// logs in the account the agent runs on.
func setupFix(fix, configDir string) string {
	set := ""
	if configDir != "" {
		set = "CLAUDE_CONFIG_DIR=" + configDir + " "
	}
	return fmt.Sprintf(fix, set)
}

var menuQuestionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^\s*(Do you want to [^\n?]*\?)`) })

// dialogPrompt is the startup dialog on screen, if any, with its menu's options.
// configDir is the agent's CLAUDE_CONFIG_DIR ("" for the default), for the fix a
// setup screen names.
func dialogPrompt(text, configDir string) *wire.Blocked {
	for _, d := range dialogs {
		if containsAll(text, d.all) {
			b := &wire.Blocked{Kind: wire.BlockedDialog, Detail: d.name, Question: d.name}
			if d.fix != "" {
				b.Kind, b.Detail = wire.BlockedSetup, setupFix(d.fix, configDir)
			}
			if m := agentkit.ParseMenu(text, true); m != nil {
				b.Options = m.Options()
			}
			return b
		}
	}
	return nil
}

// configDirSet is the agent's CLAUDE_CONFIG_DIR when one is set ("" for claude's
// default), for the command a setup screen's fix names.
func (o *observer) configDirSet() string {
	if d := o.p.opts.ConfigDir; d != "" {
		return d
	}
	if d := o.agent.Env["CLAUDE_CONFIG_DIR"]; d != "" {
		return d
	}
	return os.Getenv("CLAUDE_CONFIG_DIR")
}

// Screen implements core.Observer. Dialogs and prompt menus are always read from the
// screen: the menu is where the options are, and its going away is often the only
// sign that a prompt was answered (a "No" interrupts the turn with no hook). "Working"
// comes from the screen only when hooks are silent.
func (o *observer) Screen(s core.Screen, quiet time.Duration) *core.Signal {
	text := s.Text
	sig := &core.Signal{Source: "screen"}
	if d := dialogPrompt(text, o.configDirSet()); d != nil {
		if o.dialog == d.Question && sameOptions(o.blocked, d) {
			return nil
		}
		o.dialog = d.Question
		o.setState(sig, wire.StateBlocked, d.Kind+": "+d.Question, d)
		return sig
	}
	if o.dialog != "" {
		o.dialog = ""
		if o.state == wire.StateBlocked && o.blocked != nil && (o.blocked.Kind == wire.BlockedDialog || o.blocked.Kind == wire.BlockedSetup) {
			st := wire.StateIdle
			if o.agent.Prompt != "" {
				st = wire.StateWorking
			}
			o.setState(sig, st, "dialog dismissed", nil)
			return sig
		}
	}
	if p := parsePrompt(text); p != nil {
		if o.state == wire.StateBlocked && editing(o.blocked, p, text) {
			return nil // text typed into an option's field: the same prompt
		}
		b, merged := o.mergePrompt(p)
		if o.state == wire.StateBlocked && sameOptions(o.blocked, b) && o.blocked.Text == b.Text {
			return nil
		}
		o.menuSeen = true
		if merged {
			// The screen only completes the prompt a hook reported (its menu): the
			// hook decided the state, and --explain keeps saying so.
			sig.Source = o.source
		}
		o.setState(sig, wire.StateBlocked, b.Kind+": "+b.Detail, b)
		return sig
	}
	if o.state == wire.StateBlocked && o.blocked != nil && o.menuSeen && o.blocked.Kind != wire.BlockedLimit {
		// The menu went away: the prompt was answered (here or in an attached terminal).
		o.menuSeen = false
		if refused(text) && !strings.Contains(text, "esc to interrupt") {
			o.setState(sig, wire.StateDone, "prompt answered: turn interrupted", nil)
		} else {
			o.setState(sig, wire.StateWorking, "prompt answered", nil)
		}
		return sig
	}
	// A "No" (here or typed in an attached terminal) interrupts the turn and no hook
	// says so: once the screen has settled on it, the turn is over.
	if o.state == wire.StateWorking && quiet >= time.Second && refused(text) &&
		!strings.Contains(text, "esc to interrupt") {
		o.setState(sig, wire.StateDone, "turn interrupted", nil)
		return sig
	}
	if o.hooksSeen {
		return nil
	}
	if m := menuQuestionRE().FindStringSubmatch(text); m != nil && strings.Contains(text, "1. Yes") {
		if o.state == wire.StateBlocked {
			return nil
		}
		o.setState(sig, wire.StateBlocked, "permission prompt (screen)", &wire.Blocked{Kind: wire.BlockedPermission, Detail: strings.TrimSpace(m[1])})
		return sig
	}
	if strings.Contains(text, "esc to interrupt") && o.state != wire.StateWorking {
		o.setState(sig, wire.StateWorking, "busy (screen)", nil)
		return sig
	}
	return nil
}

// mergePrompt completes what the screen shows with what a hook said about the same
// prompt (the tool call, the plan in full); merged says it is that same prompt.
func (o *observer) mergePrompt(p *wire.Blocked) (*wire.Blocked, bool) {
	h := o.blocked
	if o.state != wire.StateBlocked || h == nil || h.Kind == wire.BlockedLimit || h.Kind == wire.BlockedDialog || h.Kind == wire.BlockedSetup {
		return p, false
	}
	if len(h.Options) > 0 && !sameOptions(h, p) {
		return p, false // another prompt than the one the hook reported
	}
	b := *p
	if h.Kind == wire.BlockedPlan || h.Kind == wire.BlockedQuestion && p.Kind != wire.BlockedPlan {
		b.Kind = h.Kind
	}
	if h.Detail != "" && (h.Kind == p.Kind || b.Kind == h.Kind) {
		b.Detail = h.Detail
	}
	if h.Text != "" {
		b.Text = h.Text
	}
	return &b, true
}

// editing reports whether p is rec with text typed into the field under the cursor:
// claude draws the text in the option's place ("3. keep the old API"), so only that
// label differs.
func editing(rec, p *wire.Blocked, text string) bool {
	if rec == nil || len(rec.Options) == 0 || len(rec.Options) != len(p.Options) || rec.Question != p.Question {
		return false
	}
	m := agentkit.ParseMenu(text, true)
	if m == nil {
		return false
	}
	sel := m.Selected()
	for i := range rec.Options {
		if rec.Options[i].Label != p.Options[i].Label && i != sel {
			return false
		}
	}
	return sel >= 0 && rec.Options[sel].Label != p.Options[sel].Label
}

func sameOptions(a, b *wire.Blocked) bool {
	if a == nil || b == nil || len(a.Options) != len(b.Options) {
		return false
	}
	for i := range a.Options {
		if a.Options[i] != b.Options[i] {
			return false
		}
	}
	return true
}

func containsAll(s string, subs []string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return len(subs) > 0
}

// lastActivity is the conversation's last line: the last non-blank line above the
// input box (a rule, the "❯" line), or of the screen when no input box shows. Older
// lines (an earlier turn's "Interrupted") say nothing about now.
// refused reports a turn that a "No" ended: the last activity is claude's
// "Interrupted · What should Claude do instead?", or the last tool's result is its
// rejection ("⎿  Rejected write to x.txt" with the refused content below it, for an
// edit; "User rejected …" in other builds). No hook reports either.
func refused(text string) bool {
	if strings.Contains(lastActivity(text), "Interrupted · ") {
		return true
	}
	lines := strings.Split(activity(text), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		t := strings.TrimSpace(lines[i])
		if strings.HasPrefix(t, "⎿") {
			r := strings.TrimSpace(strings.TrimPrefix(t, "⎿"))
			if strings.HasPrefix(r, "Rejected ") || strings.HasPrefix(r, "User rejected ") {
				return true
			}
		}
		if strings.HasPrefix(t, "● ") || strings.HasPrefix(t, "❯ ") {
			return false // the last tool call or message: its result was not a rejection
		}
	}
	return false
}

// activity is the screen above claude's input box.
func activity(text string) string {
	lines := strings.Split(text, "\n")
	for i := len(lines) - 2; i >= 0; i-- {
		if isRule(strings.TrimSpace(lines[i])) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "❯") {
			return strings.Join(lines[:i], "\n")
		}
	}
	return text
}

func lastActivity(text string) string {
	lines := strings.Split(text, "\n")
	end := len(lines)
	for i := len(lines) - 2; i >= 0; i-- {
		if isRule(strings.TrimSpace(lines[i])) && strings.HasPrefix(strings.TrimSpace(lines[i+1]), "❯") {
			end = i
			break
		}
	}
	for i := end - 1; i >= 0; i-- {
		if t := strings.TrimSpace(lines[i]); t != "" {
			return t
		}
	}
	return ""
}
