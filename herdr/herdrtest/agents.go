package herdrtest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// agentKinds are the kinds agent.start accepts and process detection recognises.
var agentKinds = []string{"pi", "claude", "codex", "gemini", "cursor", "devin", "agy", "cline", "omp",
	"mastracode", "opencode", "copilot", "kimi", "kiro", "droid", "amp", "grok", "hermes", "kilo",
	"qodercli", "maki"}

var agentNameRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// agentState is the agent half of a pane: identity, launch progress and status.
type agentState struct {
	name             string
	kind             string
	status           string // idle | working | blocked | unknown
	seen             bool
	launchPending    bool
	interactiveReady bool
	detectedAt       time.Time
	startDeadline    time.Time
	stateChangeSeq   int
	authority        string // report_agent source holding lifecycle authority
	lastSeq          map[string]int64
}

// publicStatus applies the seen flag: idle reached while unseen reads as done.
func (a *agentState) publicStatus() string {
	if a.status == "idle" && !a.seen {
		return "done"
	}
	return a.status
}

// set moves to status. Any non-idle state counts as seen; settling into idle from a
// non-idle state is seen only if the pane has a focused UI — headless, a finished
// turn therefore reads as done until someone focuses the pane (reference §2.4).
func (a *agentState) set(status string, focused bool) {
	if status == a.status {
		return
	}
	prev := a.status
	a.status = status
	a.stateChangeSeq++
	switch {
	case status != "idle":
		a.seen = true
	case prev == "working" || prev == "blocked":
		a.seen = focused
	}
}

// AgentInfo is the wire shape of reference §2.3 (false booleans omitted).
type AgentInfo struct {
	TerminalID       string `json:"terminal_id"`
	Name             string `json:"name,omitempty"`
	Agent            string `json:"agent,omitempty"`
	AgentStatus      string `json:"agent_status"`
	WorkspaceID      string `json:"workspace_id"`
	TabID            string `json:"tab_id"`
	PaneID           string `json:"pane_id"`
	Focused          bool   `json:"focused,omitempty"`
	LaunchPending    bool   `json:"launch_pending,omitempty"`
	InteractiveReady bool   `json:"interactive_ready,omitempty"`
	StateChangeSeq   int    `json:"state_change_seq"`
	Cwd              string `json:"cwd,omitempty"`
	Revision         int    `json:"revision"`
}

func (s *Server) agentInfo(p *pane) AgentInfo {
	a := p.agent
	return AgentInfo{TerminalID: p.terminalID, Name: a.name, Agent: a.kind, AgentStatus: a.publicStatus(),
		WorkspaceID: p.ws.id, TabID: p.tab.id, PaneID: p.id, LaunchPending: a.launchPending,
		InteractiveReady: a.interactiveReady, StateChangeSeq: a.stateChangeSeq, Cwd: p.cwd, Revision: p.revision}
}

// resolveAgent finds the pane of a live agent by name or by the pane id hosting it.
func (s *Server) resolveAgent(target string) (*pane, *apiError) {
	for _, p := range s.panes {
		if p.agent != nil && p.agent.name != "" && p.agent.name == target {
			return p, nil
		}
	}
	if p, ok := s.panes[target]; ok && p.agent != nil {
		return p, nil
	}
	return nil, errf("agent_not_found", "agent %s not found", target)
}

// detect runs herdr's detection loop in miniature: identify agents by the PTY's
// foreground process name, finish pending launches, and classify status from the
// screen (a "Working..." line means working) unless an integration holds authority.
func (s *Server) detect() {
	defer s.wg.Done()
	tick := time.NewTicker(max(s.opts.Poll, 250*time.Millisecond))
	defer tick.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-tick.C:
		}
		s.mu.Lock()
		ps := make([]*pane, 0, len(s.panes))
		for _, p := range s.panes {
			ps = append(ps, p)
		}
		s.mu.Unlock()
		if len(ps) == 0 {
			continue
		}
		groups := processGroups()
		for _, p := range ps {
			s.detectPane(p, groups)
		}
	}
}

// agentIn returns the agent kind running in the PTY's foreground process group:
// the first process whose name, argv[0] or script argument (node/python wrappers)
// is a known kind.
func agentIn(t *term, groups map[int][]int) string {
	pg := t.foregroundPgrp()
	if pg <= 0 {
		return ""
	}
	for _, pid := range groups[pg] {
		pi := describeProc(pid)
		cands := []string{pi.Name}
		for i, a := range pi.Argv {
			if i > 1 {
				break
			}
			cands = append(cands, filepath.Base(a))
		}
		for _, c := range cands {
			if slices.Contains(agentKinds, c) {
				return c
			}
		}
	}
	return ""
}

func (s *Server) detectPane(p *pane, groups map[int][]int) {
	fg := agentIn(p.term, groups)
	working := false
	if _, screen := p.term.rows(false, false); len(screen) > 0 {
		for _, r := range screen {
			if strings.Contains(r.text, "Working...") {
				working = true
			}
		}
	}
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, live := s.panes[p.id]; !live {
		return
	}
	a := p.agent
	isKind := slices.Contains(agentKinds, fg)
	switch {
	case a == nil && isKind:
		p.agent = &agentState{kind: fg, status: "idle", seen: true, detectedAt: now}
		p.revision++
		s.emit("pane.agent_detected", map[string]any{"pane_id": p.id, "workspace_id": p.ws.id, "agent": fg})
		return
	case a == nil:
		return
	}
	if a.launchPending {
		switch {
		case isKind && fg == a.kind:
			if a.detectedAt.IsZero() {
				a.detectedAt = now
			} else if now.Sub(a.detectedAt) >= s.opts.AgentReady {
				a.launchPending, a.interactiveReady = false, true
			}
		case now.After(a.startDeadline) || (!a.detectedAt.IsZero() && fg != a.kind):
			a.launchPending = false // exited or never appeared: the launch failed
		}
	} else if !a.interactiveReady && a.authority == "" && isKind && fg == a.kind &&
		now.Sub(a.detectedAt) >= s.opts.AgentReady {
		a.interactiveReady = true
	}
	if a.authority == "" && fg != a.kind && !a.launchPending && a.name == "" {
		// The detected process left the foreground: the pane is a plain shell again.
		p.agent = nil
		p.revision++
		s.emit("pane.agent_detected", map[string]any{"pane_id": p.id, "workspace_id": p.ws.id,
			"released": true, "final_status": a.publicStatus()})
		return
	}
	if a.authority == "" && fg == a.kind {
		if working {
			a.set("working", s.focused == p)
		} else {
			a.set("idle", s.focused == p)
		}
	}
}

type agentStartParams struct {
	Name      string   `json:"name"`
	Kind      string   `json:"kind"`
	PaneID    string   `json:"pane_id"`
	Args      []string `json:"args"`
	TimeoutMS *int64   `json:"timeout_ms"`
}

func (s *Server) agentStart(_ context.Context, raw json.RawMessage) (any, error) {
	p := decode[agentStartParams](raw)
	if !agentNameRE.MatchString(p.Name) {
		return nil, errf("invalid_agent_name", "agent name %q must match ^[a-z][a-z0-9_-]{0,31}$", p.Name)
	}
	if !slices.Contains(agentKinds, p.Kind) {
		return nil, errf("unsupported_agent_kind", "unsupported agent kind %q", p.Kind)
	}
	for _, a := range p.Args {
		if strings.IndexFunc(a, func(r rune) bool { return r < 0x20 || r == 0x7f }) >= 0 {
			return nil, errf("invalid_agent_argument", "agent arguments must not contain control characters")
		}
	}
	timeout := 30 * time.Second
	if p.TimeoutMS != nil {
		if *p.TimeoutMS <= 3000 || *p.TimeoutMS > 300000 {
			return nil, errf("invalid_agent_timeout", "timeout_ms must be in (3000, 300000]")
		}
		timeout = time.Duration(*p.TimeoutMS) * time.Millisecond
	}
	s.mu.Lock()
	pn, err := s.findPane(p.PaneID)
	if err != nil {
		s.mu.Unlock()
		return nil, errf("agent_pane_not_found", "pane %s not found", p.PaneID)
	}
	for _, o := range s.panes {
		if o.agent != nil && o.agent.name == p.Name {
			s.mu.Unlock()
			return nil, errf("agent_name_taken", "agent name %s is taken", p.Name)
		}
	}
	if pn.argvPane {
		s.mu.Unlock()
		return nil, errf("agent_pane_unavailable", "pane %s has no shell", p.PaneID)
	}
	if fg := pn.term.foregroundPgrp(); fg != pn.term.cmd.Process.Pid {
		s.mu.Unlock()
		return nil, errf("agent_pane_busy", "the shell of pane %s does not own the foreground", p.PaneID)
	}
	argv := append([]string{p.Kind}, p.Args...)
	pn.agent = &agentState{name: p.Name, kind: p.Kind, status: "unknown", launchPending: true,
		startDeadline: time.Now().Add(timeout)}
	pn.revision++
	info := s.agentInfo(pn)
	s.mu.Unlock()
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	pn.term.sendRaw(strings.Join(quoted, " ") + "\r")
	return map[string]any{"type": "agent_started", "agent": info, "argv": argv}, nil
}

func (s *Server) agentGet(_ context.Context, raw json.RawMessage) (any, error) {
	p := decode[targetParams](raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	pn, err := s.resolveAgent(p.Target)
	if err != nil {
		return nil, err
	}
	return map[string]any{"type": "agent_info", "agent": s.agentInfo(pn)}, nil
}

func (s *Server) agentList(context.Context, json.RawMessage) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := []AgentInfo{}
	for _, w := range s.workspaces {
		for _, t := range w.tabs {
			for _, p := range t.panes {
				if p.agent != nil {
					out = append(out, s.agentInfo(p))
				}
			}
		}
	}
	return map[string]any{"type": "agent_list", "agents": out}, nil
}

var defaultUntil = []string{"idle", "done", "blocked"}

// waitStatus polls until the agent pinned at the start (terminal id, name, kind)
// reaches one of until.
func (s *Server) waitStatus(ctx context.Context, target string, until []string, timeoutMS *int64) (any, error) {
	if len(until) == 0 {
		until = defaultUntil
	}
	s.mu.Lock()
	pn, err := s.resolveAgent(target)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	term, name, kind := pn.terminalID, pn.agent.name, pn.agent.kind
	s.mu.Unlock()
	return s.poll(ctx, timeoutMS, func() (any, *apiError, bool) {
		s.mu.Lock()
		defer s.mu.Unlock()
		p, live := s.panes[pn.id]
		if !live || p.terminalID != term || p.agent == nil || p.agent.name != name || p.agent.kind != kind {
			return nil, errf("agent_not_running", "agent %s is no longer running", target), true
		}
		if slices.Contains(until, p.agent.publicStatus()) {
			return map[string]any{"type": "agent_info", "agent": s.agentInfo(p)}, nil, true
		}
		return nil, nil, false
	})
}

func (s *Server) agentWait(ctx context.Context, raw json.RawMessage) (any, error) {
	p := decode[targetParams](raw)
	return s.waitStatus(ctx, p.Target, p.Until, p.TimeoutMS)
}

func (s *Server) agentPrompt(ctx context.Context, raw json.RawMessage) (any, error) {
	p := decode[targetParams](raw)
	if p.Text == "" {
		return nil, errf("empty_agent_prompt", "prompt text is empty")
	}
	s.mu.Lock()
	pn, err := s.resolveAgent(p.Target)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	a := pn.agent
	if !slices.Contains(agentKinds, a.kind) || a.launchPending || !a.interactiveReady {
		s.mu.Unlock()
		return nil, errf("agent_not_ready", "agent %s is not ready for input", p.Target)
	}
	wasWorking, seq := a.status == "working", a.stateChangeSeq
	s.mu.Unlock()
	pn.term.paste(p.Text)
	select {
	case <-time.After(300 * time.Millisecond):
	case <-ctx.Done():
		return nil, errf("server_unavailable", "request canceled")
	}
	pn.term.sendRaw("\r")
	if p.Wait == nil {
		s.mu.Lock()
		defer s.mu.Unlock()
		return map[string]any{"type": "agent_prompted", "agent": s.agentInfo(pn)}, nil
	}
	if !wasWorking {
		stall := 5 * time.Second
		code := "agent_prompt_stalled"
		if p.Wait.TimeoutMS != nil && time.Duration(*p.Wait.TimeoutMS)*time.Millisecond <= stall {
			stall, code = time.Duration(*p.Wait.TimeoutMS)*time.Millisecond, "timeout"
		}
		ms := stall.Milliseconds()
		_, err := s.poll(ctx, &ms, func() (any, *apiError, bool) {
			s.mu.Lock()
			defer s.mu.Unlock()
			if pn.agent == nil {
				return nil, errf("agent_not_running", "agent %s is no longer running", p.Target), true
			}
			return nil, nil, pn.agent.stateChangeSeq != seq
		})
		if err != nil {
			if ae, ok := err.(*apiError); ok && ae.Code == "timeout" {
				return nil, errf(code, "agent %s showed no state change after the prompt", p.Target)
			}
			return nil, err
		}
	}
	res, werr := s.waitStatus(ctx, p.Target, p.Wait.Until, p.Wait.TimeoutMS)
	if werr != nil {
		return nil, werr
	}
	m := res.(map[string]any)
	m["type"] = "agent_prompted"
	return m, nil
}

func (s *Server) agentRead(_ context.Context, raw json.RawMessage) (any, error) {
	p := decode[readParams](raw)
	return s.answerRead(s.resolveAgent, p.Target, p)
}

func (s *Server) agentSendKeys(_ context.Context, raw json.RawMessage) (any, error) {
	p := decode[targetParams](raw)
	keys, kerr := parseKeys(p.Keys)
	if kerr != nil {
		return nil, kerr
	}
	s.mu.Lock()
	pn, err := s.resolveAgent(p.Target)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	pn.term.sendKeys(keys)
	return ok, nil
}

type reportParams struct {
	PaneID string `json:"pane_id"`
	Source string `json:"source"`
	Agent  string `json:"agent"`
	State  string `json:"state"`
	Seq    *int64 `json:"seq"`
}

var sourceRE = regexp.MustCompile(`^[A-Za-z0-9:._-]{1,80}$`)

// paneReportAgent gives source lifecycle authority over the pane's status.
func (s *Server) paneReportAgent(_ context.Context, raw json.RawMessage) (any, error) {
	p := decode[reportParams](raw)
	if !sourceRE.MatchString(p.Source) {
		return nil, errf("invalid_params", "source must be 1-80 chars of [A-Za-z0-9:._-]")
	}
	if !slices.Contains([]string{"idle", "working", "blocked", "unknown"}, p.State) {
		return nil, errf("invalid_params", "state must be idle, working, blocked or unknown")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	pn, err := s.findPane(p.PaneID)
	if err != nil {
		return nil, err
	}
	if pn.agent == nil {
		pn.agent = &agentState{kind: p.Agent, status: "unknown", detectedAt: time.Now()}
		pn.revision++
	}
	a := pn.agent
	if a.lastSeq == nil {
		a.lastSeq = map[string]int64{}
	}
	if p.Seq != nil {
		if last, seen := a.lastSeq[p.Source]; seen && *p.Seq <= last {
			return ok, nil // stale: accepted but ignored
		}
		a.lastSeq[p.Source] = *p.Seq
	}
	a.authority, a.kind = p.Source, p.Agent
	a.set(p.State, s.focused == pn)
	return ok, nil
}

func (s *Server) paneReleaseAgent(_ context.Context, raw json.RawMessage) (any, error) {
	p := decode[reportParams](raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	pn, err := s.findPane(p.PaneID)
	if err != nil {
		return nil, err
	}
	if pn.agent != nil && pn.agent.authority == p.Source {
		pn.agent.authority = ""
	}
	return ok, nil
}

// focus marks p focused by a (virtual) UI: it sets the seen flag, so a settled
// agent reads idle instead of done (reference §2.4).
func (s *Server) focus(p *pane) {
	if p.agent != nil {
		p.agent.seen = true
	}
	s.focused = p
	p.ws.activeTab = p.tab
	s.emit("pane.focused", map[string]any{"pane_id": p.id, "workspace_id": p.ws.id})
}

func (s *Server) paneFocus(_ context.Context, raw json.RawMessage) (any, error) {
	p := decode[idParams](raw)
	return s.focusBy(s.findPane, p.PaneID)
}

func (s *Server) agentFocus(_ context.Context, raw json.RawMessage) (any, error) {
	p := decode[targetParams](raw)
	return s.focusBy(s.resolveAgent, p.Target)
}

// focusBy is pane.focus and agent.focus past their lookup (find: a pane by id, or an
// agent by target).
func (s *Server) focusBy(find func(string) (*pane, *apiError), key string) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pn, err := find(key)
	if err != nil {
		return nil, err
	}
	s.focus(pn)
	return ok, nil
}
