package codex

import (
	"regexp"
	"strings"
	"sync"
	"time"

	"orcr/adapters/internal/agentkit"
	"orcr/core"
	"orcr/core/wire"
)

var (
	runCmdRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?s)Would you like to run the following command\?.*?\$ ([^\n]+)`)
	})
	limitRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?s)You[’']ve hit your usage limit[^\n]*(?:\n[^\n]+)?`)
	})
	trustText = []string{"Do you trust the contents of this directory", "trust this folder", "Trust this folder"}
	// signInOthers are the sign-in menu's other entries (0.171, and the API-key entry of
	// earlier versions), one of which stands beside "Sign in with ChatGPT" on codex's
	// sign-in screen, shown instead of a session when CODEX_HOME holds no login and no
	// API key is set. Both are needed, so a conversation that merely quotes one line is
	// not taken for the screen.
	signInOthers = []string{"Sign in with Device Code", "Sign in another way", "Provide your own API key"}
)

// signedOut reports whether text is codex's sign-in screen.
func signedOut(text string) bool {
	if !strings.Contains(text, "Sign in with ChatGPT") {
		return false
	}
	for _, t := range signInOthers {
		if strings.Contains(text, t) {
			return true
		}
	}
	return false
}

// signInBlocked is what an agent on the sign-in screen waits for, with what to do:
// nothing typed into orcr gets codex past it, so the fix is the user's.
func (o *observer) signInBlocked() *wire.Blocked {
	return &wire.Blocked{Kind: wire.BlockedSetup, Question: "not signed in",
		Detail: "codex is not signed in: run `CODEX_HOME=" + o.home + " codex login` (or set OPENAI_API_KEY, or configure a model provider), " +
			"then orcr agent kill this agent and run it again; or sign in inside it with orcr agent attach"}
}

// Screen implements core.Observer: approvals, the usage-limit banner and startup
// dialogs are not in the rollout (codex does not persist them), so the screen is
// where orcr sees them.
func (o *observer) Screen(s core.Screen, quiet time.Duration) *core.Signal {
	text := s.Text
	sig := &core.Signal{Source: "screen"}
	if signedOut(text) {
		if o.dialog == "not signed in" {
			return nil
		}
		o.dialog = "not signed in"
		o.setState(sig, wire.StateBlocked, "setup: not signed in", o.signInBlocked())
		return sig
	}
	for _, t := range trustText {
		if strings.Contains(text, t) {
			if o.dialog == "trust folder" {
				return nil
			}
			o.dialog = "trust folder"
			o.setState(sig, wire.StateBlocked, "dialog: trust folder", &wire.Blocked{Kind: wire.BlockedDialog, Detail: "trust folder", Question: "trust folder", Options: dialogOptions(text)})
			return sig
		}
	}
	if o.dialog != "" {
		o.dialog = ""
		if o.state == wire.StateBlocked && o.blocked != nil && (o.blocked.Kind == wire.BlockedDialog || o.blocked.Kind == wire.BlockedSetup) {
			o.setState(sig, wire.StateWorking, "dialog dismissed", nil)
			return sig
		}
	}
	if p := parsePrompt(text); p != nil {
		return o.permission(sig, p)
	}
	if m := runCmdRE().FindStringSubmatch(text); m != nil && o.state != wire.StateBlocked {
		// The question is up but its menu not yet drawn.
		return o.permission(sig, &wire.Blocked{Kind: wire.BlockedPermission, Detail: "Bash(" + strings.TrimSpace(m[1]) + ")",
			Question: "Would you like to run the following command?"})
	}
	if o.state == wire.StateBlocked && o.blocked != nil && (o.blocked.Kind == wire.BlockedPermission || o.blocked.Kind == wire.BlockedQuestion) {
		// The approval menu went away: the command runs or was refused.
		o.setState(sig, wire.StateWorking, "approval answered", nil)
		return sig
	}
	// The rollout records the limit with its exact reset a moment after the banner
	// shows; the banner (minute precision, local time) only counts once it has stood.
	if m := limitRE().FindString(text); m != "" && quiet >= 2*time.Second && !(o.state == wire.StateBlocked && o.blocked != nil && o.blocked.Kind == wire.BlockedLimit) {
		if o.ro.Limit != nil {
			return nil // the rollout reports it with the exact reset
		}
		msg := strings.Join(strings.Fields(m), " ")
		o.limitHit(sig, msg, agentkit.ParseReset(msg, o.now(), nil))
		return o.finish(sig)
	}
	return nil
}

func (o *observer) permission(sig *core.Signal, b *wire.Blocked) *core.Signal {
	if o.state == wire.StateBlocked && o.blocked != nil && o.blocked.Detail == b.Detail && sameOptions(o.blocked, b) {
		return nil
	}
	o.setState(sig, wire.StateBlocked, b.Kind+": "+b.Detail, b)
	return sig
}

func sameOptions(a, b *wire.Blocked) bool {
	if len(a.Options) != len(b.Options) {
		return false
	}
	for i := range a.Options {
		if a.Options[i] != b.Options[i] {
			return false
		}
	}
	return true
}

// dialogOptions reads a startup dialog's menu, when it has one.
func dialogOptions(text string) []wire.Option {
	if m := agentkit.ParseMenu(text, true); m != nil {
		return m.Options()
	}
	return nil
}
