// Package keymaps owns the dashboard's key bindings as data: one struct per screen area,
// the default and vim-style sets, user overrides from config ([keys] action = ["k1","k2"]),
// and the help listing generated from the same bindings. Destructive bindings (kill) are
// flagged so the dashboard marks them and asks for confirmation before acting.
package keymaps

import (
	"fmt"
	"sort"
	"strings"
)

// Binding is one action and the keys that trigger it. Keys are spelled the way bubbletea
// prints a key press: "q", "K", "ctrl+c", "enter", "space", "up", "shift+tab".
type Binding struct {
	// Action is the stable name used in config overrides, e.g. "tree.kill".
	Action string
	Keys   []string
	Desc   string
	// Destructive marks actions that destroy work; the UI colours them and gates them
	// behind a confirmation.
	Destructive bool
}

// Matches reports whether the key press k (anything with bubbletea's String form)
// triggers b.
func (b Binding) Matches(k fmt.Stringer) bool {
	s := k.String()
	for _, key := range b.Keys {
		if key == s {
			return true
		}
	}
	return false
}

// Label is how help shows the keys: "K", "↑/k".
func (b Binding) Label() string {
	out := make([]string, 0, len(b.Keys))
	for _, k := range b.Keys {
		out = append(out, pretty(k))
	}
	return strings.Join(out, "/")
}

func pretty(k string) string {
	switch k {
	case "up":
		return "↑"
	case "down":
		return "↓"
	case "left":
		return "←"
	case "right":
		return "→"
	case "enter":
		return "⏎"
	}
	return k
}

// Global bindings work everywhere outside dialogs.
type Global struct {
	Quit, Help, FocusNext, FocusPrev, Theme, Plans, Runs Binding
	History, Web                                         Binding
}

// Tree bindings act on the agent tree and the selected agent.
type Tree struct {
	Up, Down, PageUp, PageDown, Top, Bottom Binding
	Expand, Collapse, Toggle                Binding
	Filter, ClearFilter, NextBlocked        Binding
	Status, Ended, Sort                     Binding
	Attach, Steer, SteerMulti, Answer       Binding
	Spawn, Kill                             Binding
	Restart, Fork, Rename                   Binding
	// Diff shows the selected agent's worktree diff against its base.
	Diff Binding
}

// Panel bindings act on the side panel (queue, usage, schedules, events) and the preview.
type Panel struct {
	Up, Down, NextTab, PrevTab Binding
	// PageUp and PageDown scroll the preview a page, through the agent's scrollback.
	PageUp, PageDown Binding
	// Raise, Lower and CancelQueued act on the queue tab's selected entry.
	Raise, Lower, CancelQueued Binding
}

// Dialog bindings work inside dialogs.
type Dialog struct {
	Submit, Cancel, SendMulti, Confirm Binding
}

// Plans bindings act in the plans view: the list, a plan, its approval form.
type Plans struct {
	Open, Approve, Reject, Edit, Refresh Binding
	StartRun, New                        Binding
}

// Runs bindings act in the runs view: the list, a run's milestones, its summary.
type Runs struct {
	Open, Answer, Hold, Retry, Dispatch, Coder, Summary, Refresh Binding
	Stop, Finish                                                 Binding
}

// History bindings act in the history view: finished agents, filtered like `orcr
// history GLOB --since D`, and resuming one.
type History struct {
	Resume, Filter, Refresh Binding
}

// KeyMap is every area's bindings.
type KeyMap struct {
	Name    string
	Global  Global
	Tree    Tree
	Panel   Panel
	Dialog  Dialog
	Plans   Plans
	Runs    Runs
	History History
}

func b(action, desc string, keys ...string) Binding {
	return Binding{Action: action, Keys: keys, Desc: desc}
}

// DefaultGlobal is the default global set.
func DefaultGlobal() Global {
	return Global{
		Quit:      b("global.quit", "quit", "q", "ctrl+c"),
		Help:      b("global.help", "help", "?"),
		FocusNext: b("global.focus_next", "next pane", "tab"),
		FocusPrev: b("global.focus_prev", "previous pane", "shift+tab"),
		Theme:     b("global.theme", "next theme", "T"),
		Plans:     b("global.plans", "plans", "P"),
		Runs:      b("global.runs", "runs (orchestration)", "O"),
		History:   b("global.history", "history (ended agents)", "H"),
		Web:       b("global.web", "web gateway and paired devices", "W"),
	}
}

// DefaultRuns is the default runs set. Hold is marked destructive: it stops the
// milestone's coder, so it goes through a form (retry undoes it).
func DefaultRuns() Runs {
	hold := b("runs.hold", "hold milestone (form)", "h")
	stop := b("runs.stop", "stop run: hold everything open (asks)", "X")
	stop.Destructive = true
	hold.Destructive = true
	return Runs{
		Open:     b("runs.open", "open run", "enter"),
		Answer:   b("runs.answer", "answer asking milestone", "a"),
		Hold:     hold,
		Retry:    b("runs.retry", "retry milestone (tier form)", "r"),
		Dispatch: b("runs.dispatch", "dispatch ready milestone", "d"),
		Coder:    b("runs.coder", "milestone's coder in tree", "c"),
		Summary:  b("runs.summary", "summary", "s"),
		Refresh:  b("runs.refresh", "refresh", "ctrl+r"),
		Stop:     stop,
		Finish:   b("runs.finish", "finish run: push, open the PR (asks)", "f"),
	}
}

// DefaultPlans is the default plans set. Approve is marked destructive: it fixes the
// plan a run builds, so it goes through the approval form.
func DefaultPlans() Plans {
	approve := b("plans.approve", "approve (form)", "A")
	approve.Destructive = true
	return Plans{
		Open:     b("plans.open", "open plan", "enter"),
		Approve:  approve,
		Reject:   b("plans.reject", "reject with a reason (form)", "R"),
		Edit:     b("plans.edit", "edit in $EDITOR", "e"),
		Refresh:  b("plans.refresh", "refresh", "ctrl+r"),
		StartRun: b("plans.start_run", "start the run of an approved plan", "s"),
		New:      b("plans.new", "start a plan (form): its lead drafts it", "n"),
	}
}

// DefaultHistory is the default history set.
func DefaultHistory() History {
	return History{
		Resume:  b("history.resume", "resume (opt. message)", "enter"),
		Filter:  b("history.filter", "filter: GLOB --since D", "/"),
		Refresh: b("history.refresh", "refresh", "ctrl+r"),
	}
}

// DefaultTree is the default tree set: arrows (and j/k/g/G, which every pager and
// most TUIs accept) to move, letters for actions.
func DefaultTree() Tree {
	kill := b("tree.kill", "kill by glob", "K")
	kill.Destructive = true
	restart := b("tree.restart", "restart with the same spec (asks)", "ctrl+r")
	restart.Destructive = true
	return Tree{
		Up:          b("tree.up", "up", "up", "k"),
		Down:        b("tree.down", "down", "down", "j"),
		PageUp:      b("tree.page_up", "page up", "pgup"),
		PageDown:    b("tree.page_down", "page down", "pgdown"),
		Top:         b("tree.top", "top", "home", "g"),
		Bottom:      b("tree.bottom", "bottom", "end", "G"),
		Expand:      b("tree.expand", "expand", "right"),
		Collapse:    b("tree.collapse", "collapse", "left"),
		Toggle:      b("tree.toggle", "fold/unfold", "space"),
		Filter:      b("tree.filter", "find: fuzzy, state:X", "/"),
		ClearFilter: b("tree.clear_filter", "clear finder and status", "esc"),
		Status:      b("tree.status", "status filter (cycle)", "f"),
		Ended:       b("tree.ended", "show/hide ended agents", "."),
		Sort:        b("tree.sort", "sort order (cycle)", ">"),
		NextBlocked: b("tree.next_blocked", "next blocked", "b"),
		Attach:      b("tree.attach", "attach", "enter", "a"),
		Steer:       b("tree.steer", "steer (one line)", "s"),
		SteerMulti:  b("tree.steer_multi", "steer (multi-line)", "S"),
		Answer:      b("tree.answer", "answer blocked", "r"),
		Spawn:       b("tree.spawn", "spawn agent", "n"),
		Kill:        kill,
		Restart:     restart,
		Fork:        b("tree.fork", "fork: same spec, new path", "F"),
		Rename:      b("tree.rename", "rename: move to a new path", "R"),
		Diff:        b("tree.diff", "worktree diff", "D"),
	}
}

// DefaultPanel is the default panel set.
func DefaultPanel() Panel {
	return Panel{
		Up:           b("panel.up", "scroll up", "up", "k"),
		Down:         b("panel.down", "scroll down", "down", "j"),
		NextTab:      b("panel.next_tab", "next panel tab", "]"),
		PrevTab:      b("panel.prev_tab", "previous panel tab", "["),
		PageUp:       b("panel.page_up", "page up (preview: scrollback)", "pgup"),
		PageDown:     b("panel.page_down", "page down", "pgdown"),
		Raise:        b("panel.raise", "queue: raise priority", "+", "="),
		Lower:        b("panel.lower", "queue: lower priority", "-"),
		CancelQueued: b("panel.cancel_queued", "queue: cancel entry", "x"),
	}
}

// DefaultDialog is the default dialog set.
func DefaultDialog() Dialog {
	confirm := b("dialog.confirm", "confirm destructive", "y")
	confirm.Destructive = true
	return Dialog{
		Submit:    b("dialog.submit", "submit", "enter"),
		Cancel:    b("dialog.cancel", "cancel", "esc"),
		SendMulti: b("dialog.send_multi", "send multi-line", "ctrl+s"),
		Confirm:   confirm,
	}
}

// Default is the default key map.
func Default() KeyMap {
	return KeyMap{Name: "default", Global: DefaultGlobal(), Tree: DefaultTree(),
		Panel: DefaultPanel(), Dialog: DefaultDialog(), Plans: DefaultPlans(), Runs: DefaultRuns(),
		History: DefaultHistory()}
}

// VimTree adds the rest of vim's motions to the default tree set.
func VimTree() Tree {
	t := DefaultTree()
	t.Up.Keys = []string{"k", "up"}
	t.Down.Keys = []string{"j", "down"}
	t.PageUp.Keys = []string{"ctrl+u", "pgup"}
	t.PageDown.Keys = []string{"ctrl+d", "pgdown"}
	t.Top.Keys = []string{"g", "home"}
	t.Bottom.Keys = []string{"G", "end"}
	t.Expand.Keys = []string{"l", "right"}
	t.Collapse.Keys = []string{"h", "left"}
	t.Toggle.Keys = []string{"o", "space"}
	t.Steer.Keys = []string{"i", "s"}
	t.SteerMulti.Keys = []string{"I", "S"}
	return t
}

// VimPanel adds vim motions to the default panel set.
func VimPanel() Panel {
	p := DefaultPanel()
	p.Up.Keys = []string{"k", "up"}
	p.Down.Keys = []string{"j", "down"}
	return p
}

// Vim is the vim-style key map.
func Vim() KeyMap {
	return KeyMap{Name: "vim", Global: DefaultGlobal(), Tree: VimTree(),
		Panel: VimPanel(), Dialog: DefaultDialog(), Plans: DefaultPlans(), Runs: DefaultRuns(),
		History: DefaultHistory()}
}

// ByName returns the named key map ("default" or "vim").
func ByName(name string) (KeyMap, error) {
	switch name {
	case "", "default":
		return Default(), nil
	case "vim":
		return Vim(), nil
	}
	return KeyMap{}, fmt.Errorf("unknown keymap %q (known: default, vim)", name)
}

// Section is one area's bindings, for help.
type Section struct {
	Title    string
	Bindings []Binding
}

func (k *KeyMap) areas() []struct {
	title string
	ptrs  []*Binding
} {
	g, t, p, d, pl, r, h := &k.Global, &k.Tree, &k.Panel, &k.Dialog, &k.Plans, &k.Runs, &k.History
	return []struct {
		title string
		ptrs  []*Binding
	}{
		{"Global", []*Binding{&g.Quit, &g.Help, &g.FocusNext, &g.FocusPrev, &g.Theme, &g.Plans, &g.Runs, &g.History, &g.Web}},
		{"Agents", []*Binding{&t.Up, &t.Down, &t.PageUp, &t.PageDown, &t.Top, &t.Bottom,
			&t.Expand, &t.Collapse, &t.Toggle, &t.Filter, &t.ClearFilter, &t.Status, &t.Ended, &t.Sort, &t.NextBlocked,
			&t.Attach, &t.Steer, &t.SteerMulti, &t.Answer, &t.Spawn, &t.Kill, &t.Restart, &t.Fork, &t.Rename, &t.Diff}},
		{"Panels", []*Binding{&p.Up, &p.Down, &p.NextTab, &p.PrevTab, &p.PageUp, &p.PageDown, &p.Raise, &p.Lower, &p.CancelQueued}},
		{"Dialogs", []*Binding{&d.Submit, &d.Cancel, &d.SendMulti, &d.Confirm}},
		{"Plans", []*Binding{&pl.Open, &pl.Approve, &pl.Reject, &pl.Edit, &pl.Refresh}},
		{"Runs", []*Binding{&r.Open, &r.Answer, &r.Hold, &r.Retry, &r.Dispatch, &r.Coder, &r.Summary, &r.Refresh}},
		{"History", []*Binding{&h.Resume, &h.Filter, &h.Refresh}},
	}
}

// Sections lists every binding by area, in a stable order; help is generated from it.
func (k KeyMap) Sections() []Section {
	var out []Section
	for _, a := range k.areas() {
		s := Section{Title: a.title}
		for _, p := range a.ptrs {
			s.Bindings = append(s.Bindings, *p)
		}
		out = append(out, s)
	}
	return out
}

// Apply replaces the keys of the named actions. Unknown actions, empty key lists and
// keys that would collide within one area (or with a global key) are errors, so a bad
// config is reported rather than leaving an action unreachable.
func (k *KeyMap) Apply(overrides map[string][]string) error {
	byAction := map[string]*Binding{}
	for _, a := range k.areas() {
		for _, p := range a.ptrs {
			byAction[p.Action] = p
		}
	}
	actions := make([]string, 0, len(overrides))
	for a := range overrides {
		actions = append(actions, a)
	}
	sort.Strings(actions)
	for _, a := range actions {
		p, ok := byAction[a]
		if !ok {
			return fmt.Errorf("keys: unknown action %q", a)
		}
		if len(overrides[a]) == 0 {
			return fmt.Errorf("keys: %s: no keys given", a)
		}
		p.Keys = append([]string(nil), overrides[a]...)
	}
	return k.Validate()
}

// Validate reports keys bound twice within an area, or shadowing a global binding.
// The dialog area is checked on its own, since dialogs take keys before anything else.
func (k *KeyMap) Validate() error {
	global := map[string]string{}
	for i, a := range k.areas() {
		// The first area is the global one: its keys are both its own "seen" and what
		// every other area (but dialogs) must not shadow.
		seen := global
		if i > 0 {
			seen = map[string]string{}
		}
		for _, p := range a.ptrs {
			for _, key := range p.Keys {
				prev, ok := seen[key]
				if !ok && i > 0 && a.title != "Dialogs" {
					prev, ok = global[key]
				}
				if ok {
					return fmt.Errorf("keys: %q bound to both %s and %s", key, prev, p.Action)
				}
				seen[key] = p.Action
			}
		}
	}
	return nil
}
