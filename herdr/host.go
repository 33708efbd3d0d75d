// Package herdr is the herdr host: it owns panes in a named herdr session ("orcr"),
// never the user's own, as a client of herdr's local socket API
// (shared/reference/herdr-protocol.md): one JSON request per connection, string ids,
// result/error envelopes, a protocol check through ping, argv panes through
// layout.apply, input through pane.send_text/send_keys, reads through pane.read and
// exits through an events.subscribe stream.
//
// herdr removes an argv pane the moment its program exits and reports no exit code,
// while orcr needs both the code and the last screen. So every pane runs the program
// under a small /bin/sh wrapper that starts it with exactly LaunchSpec.Env (plus
// herdr's own HERDR_* pane variables, which herdr's agent integrations call back
// through), records its exit status in a file under Options.StateDir, and then holds
// the pane open like tmux's remain-on-exit until Close. The wrapper's pid (herdr's
// shell_pid) is the pane's PID; the program is its child.
package herdr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"orcr/core"
)

// SupportedProtocols are the herdr wire protocols this client speaks.
var SupportedProtocols = []int{20}

// workspaceLabel marks the workspace orcr owns inside its session.
const workspaceLabel = "orcr"

// Options configures New.
type Options struct {
	// Bin is the herdr binary used to start the session when it is not running
	// (see FindBin). Empty: never start one; New fails if nothing answers.
	Bin string
	// Session is the named herdr session orcr owns (default "orcr"; "default",
	// the user's own session, is refused).
	Session string
	// SocketPath overrides the session's API socket (default: SocketPath(Env, Session)).
	SocketPath string
	// StateDir holds the exit-status files of panes (default: "orcr" beside the socket).
	StateDir string
	// Env is the environment for resolving paths and running herdr (default os.Environ()).
	Env []string
	// Logger receives operational logs; nil discards.
	Logger *slog.Logger
}

// Host is a core.Host backed by a herdr session.
type Host struct {
	opts   Options
	c      *client
	log    *slog.Logger
	events chan core.HostEvent

	version  string
	protocol int

	wsMu sync.Mutex // serializes finding/creating the workspace
	// reportMu makes deciding a pane's end and reporting it one step, so the exit
	// watcher and the event stream never report one pane in the wrong order or twice.
	reportMu   sync.Mutex
	subscribed chan struct{} // closed once the first events subscription is up and resynced
	mu         sync.Mutex
	wsID       string
	panes      map[string]*tracked

	ctx      context.Context
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	shutOnce sync.Once
}

// tracked is what the host remembers of a pane it launched or adopted.
type tracked struct {
	pid  int
	dead bool
	gone bool
}

var _ core.Host = (*Host)(nil)

// New connects to (or starts) the named herdr session, checks its protocol, and
// makes sure orcr's own workspace exists in it.
func New(ctx context.Context, o Options) (*Host, error) {
	if o.Session == "" {
		o.Session = "orcr"
	}
	if err := validSession(o.Session); err != nil {
		return nil, err
	}
	if o.Env == nil {
		o.Env = os.Environ()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	sessionSocket, err := SocketPath(o.Env, o.Session)
	if err != nil && o.SocketPath == "" {
		return nil, err
	}
	if o.SocketPath == "" {
		o.SocketPath = sessionSocket
	}
	if o.StateDir == "" {
		o.StateDir = filepath.Join(filepath.Dir(o.SocketPath), "orcr")
	}
	if err := os.MkdirAll(o.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("herdr: state dir: %w", err)
	}
	c := &client{socket: o.SocketPath}
	hctx, cancel := context.WithCancel(context.Background())
	h := &Host{opts: o, c: c, log: o.Logger, events: make(chan core.HostEvent, 256),
		panes: map[string]*tracked{}, ctx: hctx, cancel: cancel}

	if err := h.checkVersion(ctx); err != nil {
		if !errors.Is(err, ErrUnavailable) || o.Bin == "" {
			cancel()
			return nil, err
		}
		if err := startServer(ctx, o, c, sessionSocket); err != nil {
			cancel()
			return nil, err
		}
		if err := h.checkVersion(ctx); err != nil {
			// orcr started this server and cannot use it: do not leave it running.
			_ = c.call(ctx, "server.stop", nil, nil)
			cancel()
			return nil, err
		}
	}
	if _, err := h.workspace(ctx, false); err != nil {
		cancel()
		return nil, err
	}
	if _, err := h.List(ctx); err != nil { // adopt what is already there
		cancel()
		return nil, err
	}
	h.gcExitFiles()
	h.subscribed = make(chan struct{})
	h.wg.Add(2)
	go h.watchEvents()
	go h.watchExits()
	// Launches wait for the event stream: a pane launched and closed before the first
	// subscription would otherwise be found missing by the first resync and reported
	// as exited (without a code) instead of gone.
	select {
	case <-h.subscribed:
	case <-ctx.Done():
		h.Shutdown(context.Background())
		return nil, fmt.Errorf("herdr: subscribe to events: %w", ctx.Err())
	case <-time.After(callTimeout):
		h.log.Warn("herdr event subscription not up yet; continuing")
	}
	return h, nil
}

// checkVersion pings herdr and refuses protocols outside SupportedProtocols by name.
func (h *Host) checkVersion(ctx context.Context) error {
	var pong struct {
		Type     string `json:"type"`
		Version  string `json:"version"`
		Protocol int    `json:"protocol"`
	}
	if err := h.c.call(ctx, "ping", nil, &pong); err != nil {
		return err
	}
	if pong.Type != "pong" {
		return fmt.Errorf("herdr ping: %w: answered %q, not pong", ErrBadResponse, pong.Type)
	}
	h.version, h.protocol = pong.Version, pong.Protocol
	if !slices.Contains(SupportedProtocols, pong.Protocol) {
		return fmt.Errorf("%w: herdr %s on %s speaks protocol %d; orcr speaks herdr protocol %v — install a herdr release that speaks it",
			ErrProtocol, pong.Version, h.opts.SocketPath, pong.Protocol, SupportedProtocols)
	}
	return nil
}

// Name is "herdr".
func (h *Host) Name() string { return "herdr" }

// Version and Protocol are what herdr reported at connect time.
func (h *Host) Version() (version string, protocol int) { return h.version, h.protocol }

// SocketPath is the API socket of the session.
func (h *Host) SocketPath() string { return h.opts.SocketPath }

// workspace returns orcr's workspace id, finding it by label or creating it. A
// workspace's root shell pane is kept so the container survives when every agent
// pane is gone (herdr drops an emptied workspace silently).
func (h *Host) workspace(ctx context.Context, refresh bool) (string, error) {
	h.mu.Lock()
	id := h.wsID
	h.mu.Unlock()
	if id != "" && !refresh {
		return id, nil
	}
	// One finder at a time, in this process and across orcr processes sharing the
	// session, so racing launches do not create two "orcr" workspaces.
	h.wsMu.Lock()
	defer h.wsMu.Unlock()
	unlock, err := lockFile(filepath.Join(h.opts.StateDir, "workspace.lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	h.mu.Lock()
	now := h.wsID
	h.mu.Unlock()
	if now != "" && now != id {
		return now, nil // another caller found or made it meanwhile
	}
	var list struct {
		Workspaces []struct {
			WorkspaceID string `json:"workspace_id"`
			Label       string `json:"label"`
		} `json:"workspaces"`
	}
	if err := h.c.call(ctx, "workspace.list", nil, &list); err != nil {
		return "", err
	}
	for _, w := range list.Workspaces {
		if w.Label == workspaceLabel {
			h.setWorkspace(w.WorkspaceID)
			return w.WorkspaceID, nil
		}
	}
	home := getenv(h.opts.Env, "HOME")
	if home == "" || !filepath.IsAbs(home) {
		home = "/"
	}
	var created struct {
		Workspace struct {
			WorkspaceID string `json:"workspace_id"`
		} `json:"workspace"`
	}
	if err := h.c.call(ctx, "workspace.create", map[string]any{"cwd": home, "label": workspaceLabel,
		"focus": false}, &created); err != nil {
		return "", err
	}
	h.setWorkspace(created.Workspace.WorkspaceID)
	return created.Workspace.WorkspaceID, nil
}

func (h *Host) setWorkspace(id string) {
	h.mu.Lock()
	h.wsID = id
	h.mu.Unlock()
}

// Launch starts spec.Argv in a new tab of orcr's workspace (one agent per tab, as
// herdr's headless screen is small). Cols/Rows are not honoured: herdr sizes panes
// from its own layout and has no resize method in its API.
func (h *Host) Launch(ctx context.Context, spec core.LaunchSpec) (core.PaneInfo, error) {
	if len(spec.Argv) == 0 || spec.Argv[0] == "" {
		return core.PaneInfo{}, errors.New("herdr launch: empty argv")
	}
	if strings.Contains(spec.Argv[0], "=") {
		return core.PaneInfo{}, fmt.Errorf("herdr launch: program name %q contains '='", spec.Argv[0])
	}
	name := spec.Name
	if name == "" {
		name = "orcr"
	}
	node := map[string]any{"type": "pane", "label": name, "command": h.wrap(spec)}
	if spec.Cwd != "" {
		cwd, err := filepath.Abs(spec.Cwd)
		if err != nil {
			return core.PaneInfo{}, fmt.Errorf("herdr launch: cwd: %w", err)
		}
		node["cwd"] = cwd
	}
	var res struct {
		Layout struct {
			Root struct {
				PaneID string `json:"pane_id"`
			} `json:"root"`
		} `json:"layout"`
	}
	apply := func(refresh bool) error {
		ws, err := h.workspace(ctx, refresh)
		if err != nil {
			return err
		}
		return h.c.call(ctx, "layout.apply", map[string]any{"workspace_id": ws, "tab_label": name,
			"focus": false, "root": node}, &res)
	}
	err := apply(false)
	if errors.Is(err, &Error{Code: "workspace_not_found"}) {
		err = apply(true) // herdr restarted or the user closed it: make a new one
	}
	if err != nil {
		return core.PaneInfo{}, err
	}
	id := res.Layout.Root.PaneID
	if id == "" {
		return core.PaneInfo{}, fmt.Errorf("herdr layout.apply: %w: no pane id", ErrBadResponse)
	}
	pid, err := h.pid(ctx, id)
	if err != nil && !errors.Is(err, ErrPaneNotFound) {
		return core.PaneInfo{}, err
	}
	h.mu.Lock()
	old := h.panes[id]
	h.mu.Unlock()
	if old != nil && old.pid != pid {
		h.vanished(id, true) // herdr restarted and reused the id of a pane we knew
	}
	h.mu.Lock()
	h.panes[id] = &tracked{pid: pid}
	h.mu.Unlock()
	info := core.PaneInfo{ID: id, Name: name, PID: pid}
	if code, ok := h.exitCode(id, pid); ok {
		info.Dead, info.ExitCode = true, &code
	}
	return info, nil
}

// pid is the pane's PTY child: the wrapper, parent of the program.
func (h *Host) pid(ctx context.Context, pane string) (int, error) {
	pid, _, err := h.processInfo(ctx, pane)
	return pid, err
}

// processInfo returns the pane's PTY child pid and whether the pane still runs
// orcr's wrapper. After a cold restart herdr brings argv panes back as plain shells
// (reference §2.2) under the same id and label; those are not orcr's panes any more.
// When herdr does not report argv, the pane is assumed to be orcr's.
func (h *Host) processInfo(ctx context.Context, pane string) (pid int, ours bool, err error) {
	var res struct {
		ProcessInfo struct {
			ShellPID   int `json:"shell_pid"`
			Foreground []struct {
				Argv    []string `json:"argv"`
				Cmdline string   `json:"cmdline"`
			} `json:"foreground_processes"`
		} `json:"process_info"`
	}
	if err := h.c.call(ctx, "pane.process_info", map[string]any{"pane_id": pane}, &res); err != nil {
		return 0, false, err
	}
	known := false
	for _, p := range res.ProcessInfo.Foreground {
		if len(p.Argv) > 0 || p.Cmdline != "" {
			known = true
		}
		if slices.Contains(p.Argv, wrapperMarker) || strings.Contains(p.Cmdline, " "+wrapperMarker+" ") {
			return res.ProcessInfo.ShellPID, true, nil
		}
	}
	return res.ProcessInfo.ShellPID, !known, nil
}

// Read returns the visible screen, or with Lines > 0 the last Lines rows of
// scrollback plus screen with soft wraps joined. herdr reports neither the pane
// size nor the cursor, so Cols, Rows, CursorX and CursorY stay zero. With ANSI the
// text is read in herdr's ansi format (its styles as SGR sequences).
func (h *Host) Read(ctx context.Context, pane string, opts core.ReadOpts) (core.Screen, error) {
	params := map[string]any{"pane_id": pane, "source": "visible", "format": "text"}
	if opts.Lines > 0 {
		params["source"] = "recent_unwrapped"
		params["lines"] = min(opts.Lines, 1000)
	}
	if opts.ANSI {
		params["format"] = "ansi"
	}
	var res struct {
		Read struct {
			Text string `json:"text"`
		} `json:"read"`
	}
	if err := h.c.call(ctx, "pane.read", params, &res); err != nil {
		return core.Screen{}, err
	}
	lines := strings.Split(res.Read.Text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return core.Screen{Text: strings.Join(lines, "\n")}, nil
}

// SendText types text as raw bytes (pane.send_text: no bracketed paste, no Enter),
// in chunks that keep each request under herdr's 1 MiB line limit.
func (h *Host) SendText(ctx context.Context, pane, text string) error {
	const chunk = 256 << 10
	for len(text) > 0 {
		n := min(len(text), chunk)
		for n < len(text) && n > 0 && !utf8RuneStart(text[n]) {
			n--
		}
		if err := h.c.call(ctx, "pane.send_text", map[string]any{"pane_id": pane, "text": text[:n]}, nil); err != nil {
			return err
		}
		text = text[n:]
	}
	return nil
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

// Resize is not possible on herdr: its socket API sizes panes from its own layout
// and has no method to set a pane's terminal size.
func (h *Host) Resize(ctx context.Context, pane string, cols, rows int) error {
	return ErrResizeUnsupported
}

// ErrResizeUnsupported is returned by Resize.
var ErrResizeUnsupported = errors.New("herdr: resizing a pane is not part of herdr's socket API; herdr sizes panes from its layout")

// Close kills the pane's process and removes the pane. An unknown pane is an error
// wrapping ErrPaneNotFound.
func (h *Host) Close(ctx context.Context, pane string) error {
	h.mu.Lock()
	t := h.panes[pane]
	delete(h.panes, pane)
	h.mu.Unlock()
	err := h.c.call(ctx, "pane.close", map[string]any{"pane_id": pane}, nil)
	if t != nil && t.pid > 0 {
		_ = os.Remove(h.exitFile(pane, t.pid))
	}
	return err
}

// List returns the panes of orcr's workspace that orcr launched (the labelled ones;
// the workspace's root shell is not an agent), with pid and exit state.
func (h *Host) List(ctx context.Context) ([]core.PaneInfo, error) {
	ws, err := h.workspace(ctx, false)
	if err != nil {
		return nil, err
	}
	var res struct {
		Panes []struct {
			PaneID string `json:"pane_id"`
			Label  string `json:"label"`
		} `json:"panes"`
	}
	err = h.c.call(ctx, "pane.list", map[string]any{"workspace_id": ws}, &res)
	if errors.Is(err, &Error{Code: "workspace_not_found"}) {
		h.setWorkspace("") // recreated on the next Launch
		return []core.PaneInfo{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := make([]core.PaneInfo, 0, len(res.Panes))
	for _, p := range res.Panes {
		if p.Label == "" {
			continue
		}
		h.mu.Lock()
		t := h.panes[p.PaneID]
		h.mu.Unlock()
		pid := 0
		if t != nil && t.pid > 0 {
			pid = t.pid
		} else {
			var ours bool
			pid, ours, err = h.processInfo(ctx, p.PaneID)
			if errors.Is(err, ErrPaneNotFound) {
				continue // closed between the two calls
			}
			if err != nil {
				return nil, err
			}
			if !ours {
				continue // a shell herdr restored in place of an orcr pane
			}
		}
		info := core.PaneInfo{ID: p.PaneID, Name: p.Label, PID: pid}
		if code, ok := h.exitCode(p.PaneID, pid); ok {
			info.Dead, info.ExitCode = true, &code
		}
		h.mu.Lock()
		if h.panes[p.PaneID] == nil {
			h.panes[p.PaneID] = &tracked{pid: pid, dead: info.Dead}
		}
		h.mu.Unlock()
		out = append(out, info)
	}
	return out, nil
}

// AttachCommand opens herdr's own TUI on orcr's session (`herdr --session orcr`), where
// each agent is a tab labelled with its path. herdr's CLI has no per-pane attach.
func (h *Host) AttachCommand(pane string) []string {
	bin := h.opts.Bin
	if bin == "" {
		bin = "herdr"
	}
	if sock, err := SocketPath(h.opts.Env, h.opts.Session); err == nil && sock != h.opts.SocketPath {
		return []string{"env", "HERDR_SOCKET_PATH=" + h.opts.SocketPath, bin}
	}
	return []string{bin, "--session", h.opts.Session}
}

// Stream is not offered: herdr has a native attach.
func (h *Host) Stream(context.Context, string, io.Reader, io.Writer) error { return core.ErrNoStream }

// Events delivers PaneExited (with the recorded exit code) and PaneGone. herdr has no
// subscribable output event, so PaneOutput is never sent.
func (h *Host) Events() <-chan core.HostEvent { return h.events }

// Shutdown stops the event watchers and closes Events. herdr and its panes keep running.
func (h *Host) Shutdown(ctx context.Context) error {
	h.shutOnce.Do(func() {
		h.cancel()
		done := make(chan struct{})
		go func() { h.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			<-done
		}
		close(h.events)
	})
	return nil
}

// StopServer asks herdr to stop (server.stop): every pane process in the session dies.
func (h *Host) StopServer(ctx context.Context) error {
	return h.c.call(ctx, "server.stop", nil, nil)
}

// send delivers ev unless the host is shutting down.
func (h *Host) send(ev core.HostEvent) {
	if ev.At.IsZero() {
		ev.At = time.Now()
	}
	select {
	case h.events <- ev:
	case <-h.ctx.Done():
	}
}

// lockFile takes an exclusive flock on path; the returned func releases it.
func lockFile(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("herdr: lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("herdr: lock: %w", err)
	}
	return func() { _ = f.Close() }, nil
}

// SilentOutput tells the engine that herdr reports no screen activity, so it polls
// pane screens itself (core.SilentHost).
func (h *Host) SilentOutput() bool { return true }
