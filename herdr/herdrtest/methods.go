package herdrtest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// method is one entry of the dispatch table.
type method struct {
	required []string                                                               // params that must be present
	params   func() any                                                             // typed shape, for type checks at parse time
	long     bool                                                                   // holds the connection; canceled on peer close
	handle   func(s *Server, ctx context.Context, raw json.RawMessage) (any, error) // result value or *apiError
}

var methods map[string]method

func init() {
	methods = map[string]method{
		"ping":                  {handle: (*Server).ping},
		"server.stop":           {handle: (*Server).serverStop},
		"session.snapshot":      {handle: (*Server).sessionSnapshot},
		"workspace.create":      {params: ptr[wsCreateParams], handle: (*Server).workspaceCreate},
		"workspace.list":        {handle: (*Server).workspaceList},
		"workspace.get":         {required: []string{"workspace_id"}, params: ptr[idParams], handle: (*Server).workspaceGet},
		"workspace.close":       {required: []string{"workspace_id"}, params: ptr[idParams], handle: (*Server).workspaceClose},
		"tab.create":            {params: ptr[tabCreateParams], handle: (*Server).tabCreate},
		"tab.list":              {params: ptr[idParams], handle: (*Server).tabList},
		"tab.close":             {required: []string{"tab_id"}, params: ptr[idParams], handle: (*Server).tabClose},
		"layout.apply":          {required: []string{"root"}, params: ptr[layoutParams], handle: (*Server).layoutApply},
		"pane.split":            {required: []string{"direction"}, params: ptr[splitParams], handle: (*Server).paneSplit},
		"pane.list":             {params: ptr[idParams], handle: (*Server).paneList},
		"pane.get":              {required: []string{"pane_id"}, params: ptr[idParams], handle: (*Server).paneGet},
		"pane.read":             {required: []string{"pane_id", "source"}, params: ptr[readParams], handle: (*Server).paneRead},
		"pane.send_text":        {required: []string{"pane_id", "text"}, params: ptr[inputParams], handle: (*Server).paneSendText},
		"pane.send_keys":        {required: []string{"pane_id", "keys"}, params: ptr[inputParams], handle: (*Server).paneSendKeys},
		"pane.send_input":       {required: []string{"pane_id"}, params: ptr[inputParams], handle: (*Server).paneSendInput},
		"pane.close":            {required: []string{"pane_id"}, params: ptr[idParams], handle: (*Server).paneClose},
		"pane.process_info":     {params: ptr[idParams], handle: (*Server).paneProcessInfo},
		"pane.wait_for_output":  {required: []string{"pane_id", "source", "match"}, params: ptr[waitOutputParams], long: true, handle: (*Server).paneWaitForOutput},
		"pane.report_agent":     {required: []string{"pane_id", "source", "agent", "state"}, params: ptr[reportParams], handle: (*Server).paneReportAgent},
		"pane.release_agent":    {required: []string{"pane_id", "source", "agent"}, params: ptr[reportParams], handle: (*Server).paneReleaseAgent},
		"pane.focus":            {required: []string{"pane_id"}, params: ptr[idParams], handle: (*Server).paneFocus},
		"agent.focus":           {required: []string{"target"}, params: ptr[targetParams], handle: (*Server).agentFocus},
		"agent.start":           {required: []string{"name", "kind", "pane_id"}, params: ptr[agentStartParams], handle: (*Server).agentStart},
		"agent.get":             {required: []string{"target"}, params: ptr[targetParams], handle: (*Server).agentGet},
		"agent.list":            {handle: (*Server).agentList},
		"agent.wait":            {required: []string{"target"}, params: ptr[targetParams], long: true, handle: (*Server).agentWait},
		"agent.prompt":          {required: []string{"target", "text"}, params: ptr[targetParams], long: true, handle: (*Server).agentPrompt},
		"agent.read":            {required: []string{"target", "source"}, params: ptr[readParams], handle: (*Server).agentRead},
		"agent.send_keys":       {required: []string{"target", "keys"}, params: ptr[targetParams], handle: (*Server).agentSendKeys},
		"events.wait":           {required: []string{"match_event"}, params: ptr[eventsWaitParams], long: true, handle: (*Server).eventsWait},
		"integration.install":   {required: []string{"target"}, params: ptr[targetParams], handle: (*Server).integrationInstall},
		"integration.uninstall": {required: []string{"target"}, params: ptr[targetParams], handle: (*Server).integrationUninstall},
	}
}

func ptr[T any]() any { return new(T) }

type okResult struct {
	Type string `json:"type"`
}

var ok = okResult{Type: "ok"}

type idParams struct {
	PaneID      string `json:"pane_id"`
	TabID       string `json:"tab_id"`
	WorkspaceID string `json:"workspace_id"`
}

func (s *Server) ping(context.Context, json.RawMessage) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return map[string]any{"type": "pong", "version": s.opts.Version, "protocol": s.protocol,
		"capabilities": map[string]bool{"live_handoff": true, "detached_server_daemon": false}}, nil
}

func (s *Server) serverStop(context.Context, json.RawMessage) (any, error) {
	// Close waits for this very connection; run it after the reply is written.
	go func() {
		time.Sleep(50 * time.Millisecond)
		_ = s.Close()
	}()
	return ok, nil
}

func (s *Server) sessionSnapshot(context.Context, json.RawMessage) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	snap := map[string]any{"version": s.opts.Version, "protocol": s.protocol}
	ws, tabs, panes, layouts, agents := []any{}, []any{}, []any{}, []any{}, []any{}
	for _, w := range s.workspaces {
		ws = append(ws, s.wsInfo(w))
		for _, t := range w.tabs {
			tabs = append(tabs, s.tabInfo(t))
			layouts = append(layouts, s.layoutSnapshot(t))
			for _, p := range t.panes {
				panes = append(panes, s.paneInfo(p))
				if p.agent != nil && p.agent.kind != "" {
					agents = append(agents, s.agentInfo(p))
				}
			}
		}
	}
	snap["workspaces"], snap["tabs"], snap["panes"], snap["layouts"], snap["agents"] = ws, tabs, panes, layouts, agents
	return map[string]any{"type": "session_snapshot", "snapshot": snap}, nil
}

type wsCreateParams struct {
	Cwd   string            `json:"cwd"`
	Label string            `json:"label"`
	Focus bool              `json:"focus"`
	Env   map[string]string `json:"env"`
}

func (s *Server) workspaceCreate(_ context.Context, raw json.RawMessage) (any, error) {
	p := decode[wsCreateParams](raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	cwd := p.Cwd
	if cwd == "" {
		cwd, _ = os.UserHomeDir()
	}
	s.wsCounter++
	w := &workspace{id: workspaceID(s.wsCounter), label: p.Label, cwd: cwd}
	if w.label == "" {
		w.label = filepath.Base(cwd)
	}
	s.workspaces = append(s.workspaces, w)
	t := s.newTab(w, "")
	root, err := s.spawnPane(t, nil, cwd, p.Env, "")
	if err != nil {
		s.workspaces = s.workspaces[:len(s.workspaces)-1]
		return nil, errf("workspace_create_failed", "%s", err.Message)
	}
	s.emit("workspace.created", map[string]any{"workspace": s.wsInfo(w)})
	s.emit("tab.created", map[string]any{"tab": s.tabInfo(t)})
	s.emit("pane.created", map[string]any{"pane": s.paneInfo(root)})
	return map[string]any{"type": "workspace_created", "workspace": s.wsInfo(w), "tab": s.tabInfo(t),
		"root_pane": s.paneInfo(root)}, nil
}

func (s *Server) workspaceList(context.Context, json.RawMessage) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []WorkspaceInfo{}
	for _, w := range s.workspaces {
		out = append(out, s.wsInfo(w))
	}
	return map[string]any{"type": "workspace_list", "workspaces": out}, nil
}

func (s *Server) workspaceGet(_ context.Context, raw json.RawMessage) (any, error) {
	p := decode[idParams](raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	w, err := s.findWorkspace(p.WorkspaceID)
	if err != nil {
		return nil, err
	}
	return map[string]any{"type": "workspace_info", "workspace": s.wsInfo(w)}, nil
}

func (s *Server) workspaceClose(_ context.Context, raw json.RawMessage) (any, error) {
	p := decode[idParams](raw)
	s.mu.Lock()
	w, err := s.findWorkspace(p.WorkspaceID)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	var victims []*pane
	for _, t := range w.tabs {
		victims = append(victims, t.panes...)
	}
	info := s.wsInfo(w)
	s.closePanes(victims)
	s.emit("workspace.closed", map[string]any{"workspace_id": w.id, "workspace": info})
	s.mu.Unlock()
	return ok, nil
}

// closePanes kills panes and removes them without pane_exited events (caller holds s.mu).
func (s *Server) closePanes(ps []*pane) {
	for _, p := range ps {
		p.closing = true
		s.removePane(p)
		go p.term.kill()
	}
}

type tabCreateParams struct {
	WorkspaceID string            `json:"workspace_id"`
	Cwd         string            `json:"cwd"`
	Label       string            `json:"label"`
	Focus       bool              `json:"focus"`
	Env         map[string]string `json:"env"`
}

func (s *Server) tabCreate(_ context.Context, raw json.RawMessage) (any, error) {
	p := decode[tabCreateParams](raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.WorkspaceID == "" {
		return nil, errf("no_active_workspace", "no active workspace")
	}
	w, err := s.findWorkspace(p.WorkspaceID)
	if err != nil {
		return nil, err
	}
	t := s.newTab(w, p.Label)
	root, err := s.spawnPane(t, nil, p.Cwd, p.Env, "")
	if err != nil {
		w.tabs = w.tabs[:len(w.tabs)-1]
		return nil, errf("tab_create_failed", "%s", err.Message)
	}
	s.emit("tab.created", map[string]any{"tab": s.tabInfo(t)})
	s.emit("pane.created", map[string]any{"pane": s.paneInfo(root)})
	return map[string]any{"type": "tab_created", "tab": s.tabInfo(t), "root_pane": s.paneInfo(root)}, nil
}

func (s *Server) tabList(_ context.Context, raw json.RawMessage) (any, error) {
	p := decode[idParams](raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []TabInfo{}
	for _, w := range s.workspaces {
		if p.WorkspaceID != "" && w.id != p.WorkspaceID {
			continue
		}
		for _, t := range w.tabs {
			out = append(out, s.tabInfo(t))
		}
	}
	if p.WorkspaceID != "" {
		if _, err := s.findWorkspace(p.WorkspaceID); err != nil {
			return nil, err
		}
	}
	return map[string]any{"type": "tab_list", "tabs": out}, nil
}

func (s *Server) tabClose(_ context.Context, raw json.RawMessage) (any, error) {
	p := decode[idParams](raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	t, err := s.findTab(p.TabID)
	if err != nil {
		return nil, err
	}
	w := t.ws
	s.closePanes(slices.Clone(t.panes))
	s.emit("tab.closed", map[string]any{"tab_id": t.id, "workspace_id": w.id})
	if len(w.tabs) == 0 {
		s.emit("workspace.closed", map[string]any{"workspace_id": w.id})
	}
	return ok, nil
}

// layoutNode is a layout.apply tree node.
type layoutNode struct {
	Type      string            `json:"type"`
	Label     string            `json:"label"`
	Cwd       string            `json:"cwd"`
	Command   []string          `json:"command"`
	Env       map[string]string `json:"env"`
	Direction string            `json:"direction"`
	Ratio     float64           `json:"ratio"`
	First     *layoutNode       `json:"first"`
	Second    *layoutNode       `json:"second"`
}

type layoutParams struct {
	WorkspaceID string     `json:"workspace_id"`
	TabID       string     `json:"tab_id"`
	TabLabel    string     `json:"tab_label"`
	Focus       bool       `json:"focus"`
	Root        layoutNode `json:"root"`
}

func (n *layoutNode) leaves(out []*layoutNode) ([]*layoutNode, *apiError) {
	switch n.Type {
	case "pane":
		return append(out, n), nil
	case "split":
		if n.First == nil || n.Second == nil || (n.Direction != "right" && n.Direction != "down") {
			return nil, errf("invalid_layout", "split needs direction right|down, first and second")
		}
		out, err := n.First.leaves(out)
		if err != nil {
			return nil, err
		}
		return n.Second.leaves(out)
	default:
		return nil, errf("invalid_layout", "unknown node type %q", n.Type)
	}
}

func (s *Server) layoutApply(_ context.Context, raw json.RawMessage) (any, error) {
	p := decode[layoutParams](raw)
	if (p.WorkspaceID == "") == (p.TabID == "") {
		return nil, errf("invalid_target", "give exactly one of workspace_id or tab_id")
	}
	leaves, lerr := p.Root.leaves(nil)
	if lerr != nil {
		return nil, lerr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var w *workspace
	var old *tab
	if p.TabID != "" {
		t, err := s.findTab(p.TabID)
		if err != nil {
			return nil, err
		}
		w, old = t.ws, t
	} else {
		var err *apiError
		if w, err = s.findWorkspace(p.WorkspaceID); err != nil {
			return nil, err
		}
	}
	t := s.newTab(w, p.TabLabel)
	var created []*pane
	for _, leaf := range leaves {
		var argv []string
		if leaf.Command != nil {
			if len(leaf.Command) == 0 || leaf.Command[0] == "" {
				return nil, s.abortLayout(t, created, errf("invalid_layout", "command must be non-empty"))
			}
			argv = leaf.Command
		}
		np, err := s.spawnPane(t, argv, leaf.Cwd, leaf.Env, leaf.Label)
		if err != nil {
			return nil, s.abortLayout(t, created, errf("layout_apply_failed", "%s", err.Message))
		}
		created = append(created, np)
	}
	if old != nil {
		s.closePanes(slices.Clone(old.panes))
	}
	s.emit("tab.created", map[string]any{"tab": s.tabInfo(t)})
	for _, np := range created {
		s.emit("pane.created", map[string]any{"pane": s.paneInfo(np)})
	}
	layout := s.layoutSnapshot(t)
	s.emit("layout.updated", map[string]any{"layout": layout})
	return map[string]any{"type": "layout_apply", "layout": layout}, nil
}

func (s *Server) abortLayout(t *tab, created []*pane, err *apiError) *apiError {
	s.closePanes(created)
	t.ws.tabs = slices.DeleteFunc(t.ws.tabs, func(x *tab) bool { return x == t })
	return err
}

type splitParams struct {
	TargetPaneID string            `json:"target_pane_id"`
	WorkspaceID  string            `json:"workspace_id"`
	Direction    string            `json:"direction"`
	Ratio        float64           `json:"ratio"`
	Cwd          string            `json:"cwd"`
	Env          map[string]string `json:"env"`
	Focus        bool              `json:"focus"`
}

func (s *Server) paneSplit(_ context.Context, raw json.RawMessage) (any, error) {
	p := decode[splitParams](raw)
	if p.Direction != "right" && p.Direction != "down" {
		return nil, errf("invalid_params", "direction must be right or down")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.TargetPaneID == "" {
		return nil, errf("no_active_pane", "no active pane; pass target_pane_id")
	}
	target, err := s.findPane(p.TargetPaneID)
	if err != nil {
		return nil, errf("target_pane_not_found", "pane %s not found", p.TargetPaneID)
	}
	cwd := p.Cwd
	if cwd == "" {
		cwd = target.cwd
	}
	np, err := s.spawnPane(target.tab, nil, cwd, p.Env, "")
	if err != nil {
		return nil, err
	}
	s.emit("pane.created", map[string]any{"pane": s.paneInfo(np)})
	s.emit("layout.updated", map[string]any{"layout": s.layoutSnapshot(np.tab)})
	return map[string]any{"type": "pane_info", "pane": s.paneInfo(np)}, nil
}
