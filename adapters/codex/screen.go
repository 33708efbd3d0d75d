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
)

// Screen implements core.Observer: approvals, the usage-limit banner and startup
// dialogs are not in the rollout (codex does not persist them), so the screen is
// where orcr sees them.
func (o *observer) Screen(s core.Screen, quiet time.Duration) *core.Signal {
	text := s.Text
	sig := &core.Signal{Source: "screen"}
	for _, t := range trustText {
		if strings.Contains(text, t) {
			if o.dialog == "trust folder" {
				return nil
			}
			o.dialog = "trust folder"
			o.setState(sig, wire.StateBlocked, "dialog: trust folder", &wire.Blocked{Kind: "dialog", Detail: "trust folder"})
			return sig
		}
	}
	if o.dialog != "" {
		o.dialog = ""
		if o.state == wire.StateBlocked && o.blocked != nil && o.blocked.Kind == "dialog" {
			o.setState(sig, wire.StateWorking, "dialog dismissed", nil)
			return sig
		}
	}
	if m := runCmdRE().FindStringSubmatch(text); m != nil {
		return o.permission(sig, "Bash("+strings.TrimSpace(m[1])+")")
	}
	if strings.Contains(text, "Would you like to make the following edits?") {
		return o.permission(sig, "Edit")
	}
	if o.state == wire.StateBlocked && o.blocked != nil && o.blocked.Kind == "permission" {
		// The approval menu went away: the command runs or was refused.
		o.setState(sig, wire.StateWorking, "approval answered", nil)
		return sig
	}
	// The rollout records the limit with its exact reset a moment after the banner
	// shows; the banner (minute precision, local time) only counts once it has stood.
	if m := limitRE().FindString(text); m != "" && quiet >= 2*time.Second && !(o.state == wire.StateBlocked && o.blocked != nil && o.blocked.Kind == "usage-limit") {
		if o.ro.Limit != nil {
			return nil // the rollout reports it with the exact reset
		}
		msg := strings.Join(strings.Fields(m), " ")
		o.limitHit(sig, msg, agentkit.ParseReset(msg, o.now(), nil))
		return o.finish(sig)
	}
	return nil
}

func (o *observer) permission(sig *core.Signal, detail string) *core.Signal {
	if o.state == wire.StateBlocked && o.blocked != nil && o.blocked.Detail == detail {
		return nil
	}
	o.setState(sig, wire.StateBlocked, "permission: "+detail, &wire.Blocked{Kind: "permission", Detail: detail,
		Options: []string{"Yes, proceed", "Yes, and don't ask again", "No, and tell Codex what to do differently"}})
	return sig
}
