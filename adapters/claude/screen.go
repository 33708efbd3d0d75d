package claude

import (
	"regexp"
	"strings"
	"sync"
	"time"

	"orcr/core"
	"orcr/core/wire"
)

// dialogRule recognizes a startup dialog claude shows before it takes a prompt.
type dialogRule struct {
	name    string // what the dialog asks, as shown in "blocked: dialog: …"
	all     []string
	options []string
}

// dialogs are claude's startup dialogs (2.1.x wording). orcr pre-accepts the trust
// dialog; the rest are reported so nobody waits on a dialog nobody sees.
var dialogs = []dialogRule{
	{"trust folder", []string{"Yes, I trust this folder"}, []string{"No, exit", "Yes, I trust this folder"}},
	{"trust folder", []string{"Do you trust the files in this folder"}, []string{"Yes, proceed", "No, exit"}},
	{"use API key", []string{"Do you want to use this API key"}, []string{"Yes", "No (recommended)"}},
	{"bypass permissions warning", []string{"Bypass Permissions mode", "Yes, I accept"}, []string{"No, exit", "Yes, I accept"}},
	{"choose theme", []string{"Choose the text style"}, nil},
	{"login", []string{"Select login method"}, nil},
}

var menuQuestionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^\s*(Do you want to [^\n?]*\?)`) })

// Screen implements core.Observer. Dialogs are always read from the screen (no hook
// fires for them); permission menus and "working" only when hooks are silent.
func (o *observer) Screen(s core.Screen, quiet time.Duration) *core.Signal {
	text := s.Text
	sig := &core.Signal{Source: "screen"}
	for _, d := range dialogs {
		if containsAll(text, d.all) {
			if o.dialog == d.name {
				return nil
			}
			o.dialog = d.name
			o.setState(sig, wire.StateBlocked, "dialog: "+d.name, &wire.Blocked{Kind: "dialog", Detail: d.name, Options: d.options})
			return sig
		}
	}
	if o.dialog != "" {
		o.dialog = ""
		if o.state == wire.StateBlocked && o.blocked != nil && o.blocked.Kind == "dialog" {
			st := wire.StateIdle
			if o.agent.Prompt != "" {
				st = wire.StateWorking
			}
			o.setState(sig, st, "dialog dismissed", nil)
			return sig
		}
	}
	if o.hooksSeen {
		return nil
	}
	if m := menuQuestionRE().FindStringSubmatch(text); m != nil && strings.Contains(text, "1. Yes") {
		if o.state == wire.StateBlocked {
			return nil
		}
		o.setState(sig, wire.StateBlocked, "permission prompt (screen)", &wire.Blocked{Kind: "permission", Detail: strings.TrimSpace(m[1])})
		return sig
	}
	if strings.Contains(text, "esc to interrupt") && o.state != wire.StateWorking {
		o.setState(sig, wire.StateWorking, "busy (screen)", nil)
		return sig
	}
	return nil
}

func containsAll(s string, subs []string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return len(subs) > 0
}
