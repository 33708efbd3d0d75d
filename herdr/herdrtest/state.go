package herdrtest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
)

type workspace struct {
	id        string
	label     string
	cwd       string
	tabs      []*tab
	nextTab   int
	nextPane  int
	activeTab *tab
}

type tab struct {
	id     string
	ws     *workspace
	number int
	label  string
	panes  []*pane
}

type pane struct {
	id         string
	terminalID string
	ws         *workspace
	tab        *tab
	label      string
	cwd        string
	term       *term
	argvPane   bool // layout.apply argv pane: no shell behind it
	revision   int
	closing    bool // pane.close / server stop in progress: no pane_exited
	agent      *agentState
}

// wsAlphabet is herdr's base-32-ish workspace id alphabet (reference §3).
const wsAlphabet = "123456789ABCDEFGHJKMNPQRSTVWXYZ0"

// workspaceID renders counter n (1-based) as w1…wZ, w0, w11….
func workspaceID(n int) string {
	var b []byte
	for n > 0 {
		n--
		b = append([]byte{wsAlphabet[n%32]}, b...)
		n /= 32
	}
	return "w" + string(b)
}

func newTerminalID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "term_" + hex.EncodeToString(b[:])
}

// WorkspaceInfo, TabInfo and PaneInfo are the wire shapes of reference §2.1/§2.3.
type WorkspaceInfo struct {
	WorkspaceID string `json:"workspace_id"`
	Number      int    `json:"number"`
	Label       string `json:"label"`
	Focused     bool   `json:"focused"`
	PaneCount   int    `json:"pane_count"`
	TabCount    int    `json:"tab_count"`
	ActiveTabID string `json:"active_tab_id"`
	AgentStatus string `json:"agent_status"`
}

type TabInfo struct {
	TabID       string `json:"tab_id"`
	WorkspaceID string `json:"workspace_id"`
	Number      int    `json:"number"`
	Label       string `json:"label"`
	Focused     bool   `json:"focused"`
	PaneCount   int    `json:"pane_count"`
	AgentStatus string `json:"agent_status"`
}

type PaneInfo struct {
	PaneID        string `json:"pane_id"`
	TerminalID    string `json:"terminal_id"`
	WorkspaceID   string `json:"workspace_id"`
	TabID         string `json:"tab_id"`
	Focused       bool   `json:"focused"`
	Cwd           string `json:"cwd,omitempty"`
	ForegroundCwd string `json:"foreground_cwd,omitempty"`
	Label         string `json:"label,omitempty"`
	Agent         string `json:"agent,omitempty"`
	AgentStatus   string `json:"agent_status"`
	Revision      int    `json:"revision"`
}

func (s *Server) wsInfo(w *workspace) WorkspaceInfo {
	n := slices.Index(s.workspaces, w) + 1
	panes := 0
	for _, t := range w.tabs {
		panes += len(t.panes)
	}
	active := ""
	if w.activeTab != nil {
		active = w.activeTab.id
	}
	return WorkspaceInfo{WorkspaceID: w.id, Number: n, Label: w.label, PaneCount: panes,
		TabCount: len(w.tabs), ActiveTabID: active, AgentStatus: s.aggregateStatus(w.tabs)}
}

func (s *Server) tabInfo(t *tab) TabInfo {
	return TabInfo{TabID: t.id, WorkspaceID: t.ws.id, Number: slices.Index(t.ws.tabs, t) + 1, Label: t.label,
		PaneCount: len(t.panes), AgentStatus: s.aggregateStatus([]*tab{t})}
}

func (s *Server) paneInfo(p *pane) PaneInfo {
	pi := PaneInfo{PaneID: p.id, TerminalID: p.terminalID, WorkspaceID: p.ws.id, TabID: p.tab.id,
		Cwd: p.cwd, Label: p.label, AgentStatus: "unknown", Revision: p.revision}
	if p.agent != nil && p.agent.kind != "" {
		pi.Agent = p.agent.kind
		pi.AgentStatus = p.agent.publicStatus()
	}
	return pi
}

func (s *Server) aggregateStatus(tabs []*tab) string {
	st := "unknown"
	for _, t := range tabs {
		for _, p := range t.panes {
			if p.agent != nil && p.agent.kind != "" {
				switch ps := p.agent.publicStatus(); {
				case ps == "blocked":
					return "blocked"
				case ps == "working":
					st = "working"
				case st == "unknown":
					st = ps
				}
			}
		}
	}
	return st
}

func (s *Server) findWorkspace(id string) (*workspace, *apiError) {
	for _, w := range s.workspaces {
		if w.id == id {
			return w, nil
		}
	}
	return nil, errf("workspace_not_found", "workspace %s not found", id)
}

func (s *Server) findTab(id string) (*tab, *apiError) {
	for _, w := range s.workspaces {
		for _, t := range w.tabs {
			if t.id == id {
				return t, nil
			}
		}
	}
	return nil, errf("tab_not_found", "tab %s not found", id)
}

func (s *Server) findPane(id string) (*pane, *apiError) {
	if p, ok := s.panes[id]; ok {
		return p, nil
	}
	return nil, errf("pane_not_found", "pane %s not found", id)
}

// newTab adds an empty tab to w.
func (s *Server) newTab(w *workspace, label string) *tab {
	w.nextTab++
	t := &tab{id: fmt.Sprintf("%s:t%d", w.id, w.nextTab), ws: w, number: len(w.tabs) + 1, label: label}
	if t.label == "" {
		t.label = fmt.Sprint(t.number)
	}
	w.tabs = append(w.tabs, t)
	if w.activeTab == nil {
		w.activeTab = t
	}
	return t
}

// spawnPane starts argv (nil = the shell) as a new pane of t.
func (s *Server) spawnPane(t *tab, argv []string, cwd string, env map[string]string, label string) (*pane, *apiError) {
	w := t.ws
	if cwd == "" {
		cwd = w.cwd
	}
	if !strings.HasPrefix(cwd, "/") {
		return nil, errf("invalid_params", "cwd must be absolute: %s", cwd)
	}
	w.nextPane++
	p := &pane{id: fmt.Sprintf("%s:p%d", w.id, w.nextPane), terminalID: newTerminalID(),
		ws: w, tab: t, label: label, cwd: cwd, argvPane: argv != nil}
	if argv == nil {
		argv = []string{s.opts.Shell}
	}
	full := s.paneEnv(p, env)
	tm, err := startTerm(argv, cwd, full, s.opts.Cols, s.opts.Rows)
	if err != nil {
		w.nextPane-- // nothing was created; herdr reports the failure without consuming state
		return nil, errf("pane_split_failed", "failed to start %q: %v", argv[0], err)
	}
	p.term = tm
	t.panes = append(t.panes, p)
	s.panes[p.id] = p
	s.wg.Add(1)
	go s.watchExit(p)
	return p, nil
}

// paneEnv is the server environment, then the caller's env, then herdr's own
// variables, which win on conflict (reference §3).
func (s *Server) paneEnv(p *pane, env map[string]string) []string {
	m := map[string]string{}
	var order []string
	set := func(k, v string) {
		if _, ok := m[k]; !ok {
			order = append(order, k)
		}
		m[k] = v
	}
	for _, kv := range s.opts.Env {
		if k, v, ok := strings.Cut(kv, "="); ok {
			set(k, v)
		}
	}
	delete(m, "CODEX_THREAD_ID")
	if _, ok := m["TERM"]; !ok {
		set("TERM", "xterm-256color")
	}
	keys := make([]string, 0, len(env))
	for k := range env {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		set(k, env[k])
	}
	set("HERDR_ENV", "1")
	set("HERDR_SOCKET_PATH", s.opts.SocketPath)
	set("HERDR_BIN_PATH", herdrBinPath())
	set("HERDR_WORKSPACE_ID", p.ws.id)
	set("HERDR_TAB_ID", p.tab.id)
	set("HERDR_PANE_ID", p.id)
	out := make([]string, 0, len(order))
	for _, k := range order {
		if v, ok := m[k]; ok {
			out = append(out, k+"="+v)
		}
	}
	return out
}

// watchExit turns a process exit into herdr's implicit removal: only pane_exited
// (plus a layout update) is emitted, and an emptied tab/workspace silently goes.
func (s *Server) watchExit(p *pane) {
	defer s.wg.Done()
	<-p.term.done
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.panes[p.id]; !ok {
		return
	}
	closing := p.closing
	s.removePane(p)
	if !closing {
		s.emit("pane.exited", map[string]any{"pane_id": p.id, "workspace_id": p.ws.id})
		if p.tab != nil && len(p.tab.panes) > 0 {
			s.emit("layout.updated", map[string]any{"layout": s.layoutSnapshot(p.tab)})
		}
	}
}

// removePane drops p and any tab/workspace it leaves empty. It reports what vanished.
func (s *Server) removePane(p *pane) (tabGone, wsGone bool) {
	delete(s.panes, p.id)
	if s.focused == p {
		s.focused = nil
	}
	t := p.tab
	t.panes = slices.DeleteFunc(t.panes, func(x *pane) bool { return x == p })
	if len(t.panes) > 0 {
		return false, false
	}
	w := t.ws
	w.tabs = slices.DeleteFunc(w.tabs, func(x *tab) bool { return x == t })
	if w.activeTab == t {
		w.activeTab = nil
		if len(w.tabs) > 0 {
			w.activeTab = w.tabs[0]
		}
	}
	if len(w.tabs) > 0 {
		return true, false
	}
	s.workspaces = slices.DeleteFunc(s.workspaces, func(x *workspace) bool { return x == w })
	return true, true
}

// layoutSnapshot is a minimal PaneLayoutSnapshot: every tab here is a row of panes.
func (s *Server) layoutSnapshot(t *tab) map[string]any {
	var root map[string]any
	for i := len(t.panes) - 1; i >= 0; i-- {
		node := map[string]any{"type": "pane", "pane_id": t.panes[i].id}
		if root == nil {
			root = node
		} else {
			root = map[string]any{"type": "split", "direction": "right", "ratio": 0.5, "first": node, "second": root}
		}
	}
	focused := ""
	if len(t.panes) > 0 {
		focused = t.panes[0].id
	}
	return map[string]any{"workspace_id": t.ws.id, "tab_id": t.id, "zoomed": false,
		"focused_pane_id": focused, "root": root}
}

// event is one entry of the server's event ring.
type event struct {
	seq  uint64
	kind string // subscription type, dotted: pane.exited
	name string // pushed name, snake_case: pane_exited
	data map[string]any
	at   time.Time
}

// emit records an event in the ring (caller holds s.mu).
func (s *Server) emit(kind string, data map[string]any) {
	s.eventSeq++
	name := strings.ReplaceAll(kind, ".", "_")
	d := map[string]any{"type": name}
	for k, v := range data {
		d[k] = v
	}
	s.events = append(s.events, event{seq: s.eventSeq, kind: kind, name: name, data: d, at: time.Now()})
	if len(s.events) > ringSize {
		s.events = s.events[len(s.events)-ringSize:]
	}
}
