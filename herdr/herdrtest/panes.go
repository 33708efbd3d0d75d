package herdrtest

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"time"
)

func (s *Server) paneList(_ context.Context, raw json.RawMessage) (any, error) {
	p := decode[idParams](raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	if p.WorkspaceID != "" {
		if _, err := s.findWorkspace(p.WorkspaceID); err != nil {
			return nil, err
		}
	}
	out := []PaneInfo{}
	for _, w := range s.workspaces {
		if p.WorkspaceID != "" && w.id != p.WorkspaceID {
			continue
		}
		for _, t := range w.tabs {
			for _, pn := range t.panes {
				out = append(out, s.paneInfo(pn))
			}
		}
	}
	return map[string]any{"type": "pane_list", "panes": out}, nil
}

func (s *Server) paneGet(_ context.Context, raw json.RawMessage) (any, error) {
	p := decode[idParams](raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	pn, err := s.findPane(p.PaneID)
	if err != nil {
		return nil, err
	}
	return map[string]any{"type": "pane_info", "pane": s.paneInfo(pn)}, nil
}

type readParams struct {
	PaneID string `json:"pane_id"`
	Target string `json:"target"`
	Source string `json:"source"`
	Lines  *int   `json:"lines"`
	Format string `json:"format"`
}

func (s *Server) paneRead(_ context.Context, raw json.RawMessage) (any, error) {
	p := decode[readParams](raw)
	return s.answerRead(s.findPane, p.PaneID, p)
}

// answerRead is pane.read and agent.read past their lookup: find (a pane by id, or an
// agent by target) under the lock, then read the screen outside it.
func (s *Server) answerRead(find func(string) (*pane, *apiError), key string, p readParams) (any, error) {
	s.mu.Lock()
	pn, err := find(key)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	read, rerr := s.readPane(pn, p.Source, p.Lines, p.Format)
	if rerr != nil {
		return nil, rerr
	}
	return map[string]any{"type": "pane_read", "read": read}, nil
}

// PaneRead is the wire shape of a read (reference §2.5).
type PaneRead struct {
	PaneID      string `json:"pane_id"`
	WorkspaceID string `json:"workspace_id"`
	TabID       string `json:"tab_id"`
	Source      string `json:"source"`
	Format      string `json:"format"`
	Text        string `json:"text"`
	Revision    int    `json:"revision"`
	Truncated   bool   `json:"truncated"`
}

// readPane renders a pane per source: visible screen, recent rows with scrollback,
// recent with soft wraps joined, or the detector's bottom text.
func (s *Server) readPane(pn *pane, source string, lines *int, format string) (PaneRead, *apiError) {
	if format == "" {
		format = "text"
	}
	if format != "text" && format != "ansi" {
		return PaneRead{}, errf("invalid_params", "format must be text or ansi")
	}
	ansi := format == "ansi"
	scroll, screen := pn.term.rows(ansi && source != "detection", source == "recent" || source == "recent_unwrapped")
	var rows []string
	n := -1
	if lines != nil {
		n = min(max(*lines, 0), 1000)
	}
	switch source {
	case "visible", "detection":
		for _, r := range screen {
			rows = append(rows, r.text)
		}
		rows = trimTrailingEmpty(rows)
	case "recent", "recent_unwrapped":
		if n < 0 {
			n = 80
		}
		all := append(scroll, screen...)
		if source == "recent" {
			for _, r := range all {
				rows = append(rows, r.text)
			}
		} else {
			var cur strings.Builder
			for _, r := range all {
				cur.WriteString(r.text)
				if !r.wrapped {
					rows = append(rows, cur.String())
					cur.Reset()
				}
			}
			if cur.Len() > 0 {
				rows = append(rows, cur.String())
			}
		}
		rows = trimTrailingEmpty(rows)
	default:
		return PaneRead{}, errf("invalid_request", "invalid request: unknown variant `%s`", source)
	}
	truncated := false
	if n < 0 && len(rows) > 1000 {
		n = 1000
	}
	if n >= 0 && len(rows) > n {
		rows = rows[len(rows)-n:]
		truncated = true
	}
	s.mu.Lock()
	wsID, tabID := pn.ws.id, pn.tab.id
	s.mu.Unlock()
	return PaneRead{PaneID: pn.id, WorkspaceID: wsID, TabID: tabID, Source: source, Format: format,
		Text: strings.Join(rows, "\n"), Truncated: truncated}, nil
}

func trimTrailingEmpty(rows []string) []string {
	for len(rows) > 0 && strings.TrimSpace(rows[len(rows)-1]) == "" {
		rows = rows[:len(rows)-1]
	}
	return rows
}

type inputParams struct {
	PaneID string   `json:"pane_id"`
	Text   *string  `json:"text"`
	Keys   []string `json:"keys"`
}

func (s *Server) inputPane(id string) (*pane, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	pn, err := s.findPane(id)
	if err != nil {
		return nil, err
	}
	if pn.term.exited() {
		return nil, errf("pane_send_failed", "pane %s has exited", id)
	}
	return pn, nil
}

func (s *Server) paneSendText(_ context.Context, raw json.RawMessage) (any, error) {
	p := decode[inputParams](raw)
	pn, err := s.inputPane(p.PaneID)
	if err != nil {
		return nil, err
	}
	pn.term.sendRaw(*p.Text)
	return ok, nil
}

func (s *Server) paneSendKeys(_ context.Context, raw json.RawMessage) (any, error) {
	p := decode[inputParams](raw)
	return s.sendInput(p.PaneID, nil, p.Keys) // send_keys takes no text
}

func (s *Server) paneSendInput(_ context.Context, raw json.RawMessage) (any, error) {
	p := decode[inputParams](raw)
	return s.sendInput(p.PaneID, p.Text, p.Keys)
}

// sendInput pastes text (if any) into the pane, then sends keys: pane.send_input, and
// pane.send_keys without the text.
func (s *Server) sendInput(id string, text *string, names []string) (any, error) {
	keys, kerr := parseKeys(names)
	if kerr != nil {
		return nil, kerr
	}
	pn, err := s.inputPane(id)
	if err != nil {
		return nil, err
	}
	if text != nil && *text != "" {
		pn.term.paste(*text)
	}
	pn.term.sendKeys(keys)
	return ok, nil
}

func (s *Server) paneClose(_ context.Context, raw json.RawMessage) (any, error) {
	p := decode[idParams](raw)
	s.mu.Lock()
	pn, err := s.findPane(p.PaneID)
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	pn.closing = true
	_, wsGone := s.removePane(pn)
	s.emit("pane.closed", map[string]any{"pane_id": pn.id, "workspace_id": pn.ws.id})
	if wsGone {
		s.emit("workspace.closed", map[string]any{"workspace_id": pn.ws.id})
	}
	s.mu.Unlock()
	pn.term.kill() // the reply comes after the terminal is gone, as herdr kills it in place
	return ok, nil
}

func (s *Server) paneProcessInfo(_ context.Context, raw json.RawMessage) (any, error) {
	p := decode[idParams](raw)
	s.mu.Lock()
	if p.PaneID == "" {
		s.mu.Unlock()
		return nil, errf("no_active_pane", "no focused pane in a headless server; pass pane_id")
	}
	pn, err := s.findPane(p.PaneID)
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	info := map[string]any{"pane_id": pn.id, "foreground_processes": []procInfo{}}
	if !pn.term.exited() {
		info["shell_pid"] = pn.term.cmd.Process.Pid
		if pg := pn.term.foregroundPgrp(); pg > 0 {
			info["foreground_process_group_id"] = pg
			info["foreground_processes"] = processesInGroup(pg)
		}
		info["tty"] = ttyName(pn.term)
	}
	return map[string]any{"type": "pane_process_info", "process_info": info}, nil
}

func ttyName(t *term) string {
	if n, err := os.Readlink("/proc/" + itoa(t.cmd.Process.Pid) + "/fd/0"); err == nil {
		return n
	}
	return ""
}

type waitOutputParams struct {
	PaneID    string    `json:"pane_id"`
	Source    string    `json:"source"`
	Lines     *int      `json:"lines"`
	Match     matchSpec `json:"match"`
	TimeoutMS *int64    `json:"timeout_ms"`
	StripANSI *bool     `json:"strip_ansi"`
}

type matchSpec struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

func (m matchSpec) compile() (func(string) bool, *apiError) {
	switch m.Type {
	case "substring":
		v := m.Value
		return func(l string) bool { return strings.Contains(l, v) }, nil
	case "regex":
		re, err := regexp.Compile(m.Value)
		if err != nil {
			return nil, errf("invalid_regex", "invalid regex %q: %v", m.Value, err)
		}
		return re.MatchString, nil
	default:
		return nil, errf("invalid_params", "match.type must be substring or regex")
	}
}

// matchLine returns the first line of read text that matches.
func matchLine(text string, f func(string) bool) (string, bool) {
	for _, l := range strings.Split(text, "\n") {
		if f(l) {
			return l, true
		}
	}
	return "", false
}

func (s *Server) paneWaitForOutput(ctx context.Context, raw json.RawMessage) (any, error) {
	p := decode[waitOutputParams](raw)
	f, merr := p.Match.compile()
	if merr != nil {
		return nil, merr
	}
	src := p.Source
	if src == "recent" {
		src = "recent_unwrapped" // recent is searched unwrapped
	}
	format := "text"
	if p.StripANSI != nil && !*p.StripANSI {
		format = "ansi"
	}
	return s.poll(ctx, p.TimeoutMS, func() (any, *apiError, bool) {
		s.mu.Lock()
		pn, err := s.findPane(p.PaneID)
		s.mu.Unlock()
		if err != nil {
			return nil, err, true
		}
		read, rerr := s.readPane(pn, src, p.Lines, format)
		if rerr != nil {
			return nil, rerr, true
		}
		if line, ok := matchLine(read.Text, f); ok {
			read.Source = p.Source
			return map[string]any{"type": "output_matched", "pane_id": pn.id, "revision": 0,
				"matched_line": line, "read": read}, nil, true
		}
		return nil, nil, false
	})
}

// poll runs check every Poll interval until it is done, the timeout passes
// (`timeout`) or the client goes away.
func (s *Server) poll(ctx context.Context, timeoutMS *int64, check func() (any, *apiError, bool)) (any, error) {
	var deadline <-chan time.Time
	if timeoutMS != nil {
		tm := time.NewTimer(time.Duration(*timeoutMS) * time.Millisecond)
		defer tm.Stop()
		deadline = tm.C
	}
	tick := time.NewTicker(s.opts.Poll)
	defer tick.Stop()
	for {
		res, err, done := check()
		if done {
			if err != nil {
				return nil, err
			}
			return res, nil
		}
		select {
		case <-ctx.Done():
			return nil, errf("server_unavailable", "request canceled")
		case <-deadline:
			return nil, errf("timeout", "timed out")
		case <-tick.C:
		}
	}
}
