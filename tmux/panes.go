package tmux

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"orcr/core"
	"orcr/sandbox/confine"
)

// Launch starts spec.Argv in a new window named spec.Name.
func (h *Host) Launch(ctx context.Context, spec core.LaunchSpec) (core.PaneInfo, error) {
	if len(spec.Argv) == 0 {
		return core.PaneInfo{}, errors.New("tmux: launch: empty argv")
	}
	if err := checkProgram(spec); err != nil {
		return core.PaneInfo{}, fmt.Errorf("tmux: launch: %w", err)
	}
	cols, rows := spec.Cols, spec.Rows
	if cols <= 0 {
		cols = 200
	}
	if rows <= 0 {
		rows = 50
	}
	name := spec.Name
	if name == "" {
		name = filepath.Base(spec.Argv[0])
	}
	if bin, policy, _, ok := confine.ParseLauncherArgv(spec.Argv); ok && !h.noSpare {
		// A confined launch: in the spare launcher when one is ready; the next one
		// starts off this path either way (spare.go).
		info, ok, err := h.launchSpare(ctx, spec, name, cols, rows)
		h.refillSpare(bin, policy, cols, rows)
		if ok {
			return info, err
		}
	}
	// The window line, built under the control client's lock with what it needs
	// beside the session's environment (sendLaunch).
	line := func(add, unset []string) string {
		var b strings.Builder
		b.WriteString("new-window -d -t " + session + ": -n " + quoteFormat(name))
		b.WriteString(` -P -F "#{pane_id} #{pane_pid} #{window_id}"`)
		if spec.Cwd != "" {
			b.WriteString(" -c " + quoteFormat(spec.Cwd))
		}
		for _, kv := range add {
			b.WriteString(" -e " + quote(kv))
		}
		b.WriteString(" --")
		for _, a := range launchArgv(spec, unset) {
			b.WriteString(" " + quote(a))
		}
		return b.String()
	}
	// The size is the session's default-size at the moment tmux creates the window;
	// it is set only when it differs from the last one set, in the same write as the
	// new-window, so no other launch comes between them.
	c, err := h.conn(ctx)
	if err != nil {
		return core.PaneInfo{}, fmt.Errorf("tmux: launch: %w", err)
	}
	size := fmt.Sprintf("%dx%d", cols, rows)
	reqs, sized, err := c.sendLaunch(size, fmt.Sprintf("set-option -t %s default-size %s", session, size), spec.Env, line)
	if err != nil {
		return core.PaneInfo{}, fmt.Errorf("tmux: launch: %w", err)
	}
	var sizeErr error
	if sized {
		if _, sizeErr = reqs[0].wait(ctx); sizeErr != nil {
			c.forgetSize()
		}
		reqs = reqs[1:]
	}
	out, err := reqs[0].wait(ctx)
	if err != nil {
		return core.PaneInfo{}, fmt.Errorf("tmux: launch: %w", err)
	}
	if sizeErr != nil {
		// The window exists at a size nobody asked for: close it, report the cause.
		if f := strings.Fields(strings.Join(out, " ")); len(f) == 3 {
			_, _ = h.call(ctx, "kill-window -t "+f[2])
		}
		return core.PaneInfo{}, fmt.Errorf("tmux: launch: set size: %w", sizeErr)
	}
	if len(out) != 1 {
		return core.PaneInfo{}, fmt.Errorf("tmux: launch: unexpected reply %q", out)
	}
	f := strings.Fields(out[0])
	if len(f) != 3 {
		return core.PaneInfo{}, fmt.Errorf("tmux: launch: unexpected reply %q", out[0])
	}
	pid, _ := strconv.Atoi(f[1])
	info := core.PaneInfo{ID: f[0], Name: name, PID: pid}
	h.mu.Lock()
	p := h.paneLocked(f[0])
	p.window, p.name, p.pid, p.mine = f[2], name, pid, true
	h.windows[f[2]] = f[0]
	h.maybeExitedLocked(f[0], p)
	h.watchExitLocked(f[0], p)
	if p.dead {
		info.Dead, info.ExitCode = true, p.exitCode
	}
	h.mu.Unlock()
	return info, nil
}

// launchArgv is the argv handed to tmux. tmux adds SHELL, TERM_PROGRAM and
// TERM_PROGRAM_VERSION to every pane; those the spec does not set are removed with
// env(1), which execs the program so its pid stays the pane's, and so are the
// variables of the session's environment the spec does not have (unset, sessionenv.go).
// tmux sets SHELL after the window's -e, so a spec's SHELL is set by env(1) too. TMUX
// and TMUX_PANE stay: the program does run inside tmux. A single-word argv would be
// run through the shell by tmux; the env(1) wrapper (or sh's exec) keeps the word
// uninterpreted. env(1) would take a program named NAME=VALUE for a variable, so such
// a program is started by sh, which execs it by name.
func launchArgv(spec core.LaunchSpec, unset []string) []string {
	names := slices.Clone(unset)
	for _, name := range []string{"SHELL", "TERM_PROGRAM", "TERM_PROGRAM_VERSION"} {
		if !hasVar(spec.Env, name) {
			names = append(names, name)
		}
	}
	shell := lastOf(spec.Env, "SHELL")
	if len(names) > 0 || shell != "" {
		argv := []string{envBin}
		for _, n := range names {
			argv = append(argv, "-u", n)
		}
		argv = append(argv, "--")
		if shell != "" {
			argv = append(argv, shell)
		}
		if strings.Contains(spec.Argv[0], "=") {
			argv = append(argv, "/bin/sh", "-c", `exec "$0" "$@"`)
		}
		return append(argv, spec.Argv...)
	}
	if len(spec.Argv) == 1 {
		return []string{"/bin/sh", "-c", `exec "$0"`, spec.Argv[0]}
	}
	return spec.Argv
}

// lastOf is the last NAME=VALUE of name in env, "" when there is none.
func lastOf(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if strings.HasPrefix(env[i], name+"=") {
			return env[i]
		}
	}
	return ""
}

// envBin is env(1).
const envBin = "/usr/bin/env"

func hasVar(env []string, name string) bool {
	for _, kv := range env {
		if strings.HasPrefix(kv, name+"=") {
			return true
		}
	}
	return false
}

// checkProgram fails early, with a clear error, when the cwd is missing or argv[0]
// cannot be found in the PATH of spec.Env; tmux would only show a dead pane.
func checkProgram(spec core.LaunchSpec) error {
	if spec.Cwd != "" {
		if st, err := os.Stat(spec.Cwd); err != nil || !st.IsDir() {
			return fmt.Errorf("working directory %s: not a directory", spec.Cwd)
		}
	}
	prog := spec.Argv[0]
	if strings.Contains(prog, "/") {
		if !filepath.IsAbs(prog) && spec.Cwd != "" {
			prog = filepath.Join(spec.Cwd, prog)
		}
		if isExecutable(prog) {
			return nil
		}
		return fmt.Errorf("%s: not an executable file", spec.Argv[0])
	}
	path := "/usr/local/bin:/usr/bin:/bin"
	for _, kv := range spec.Env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		if !filepath.IsAbs(dir) && spec.Cwd != "" {
			dir = filepath.Join(spec.Cwd, dir)
		}
		if isExecutable(filepath.Join(dir, prog)) {
			return nil
		}
	}
	return fmt.Errorf("%s: not found in PATH", prog)
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && !st.IsDir() && st.Mode()&0o111 != 0
}

// paneLocked returns the state of pane, creating it.
func (h *Host) paneLocked(pane string) *paneState {
	p := h.panes[pane]
	if p == nil {
		p = &paneState{}
		h.panes[pane] = p
	}
	return p
}

// runningLocked counts the agent panes (launched or listed here) whose program still
// runs. The session's placeholder window is no agent's: the exit subscription reports
// it alive like any pane (so it is "mine"), but neither Launch nor List gave it a
// window, and counting it made a burst's last end look like one with a program still
// running (the burst's memory was then never returned).
func (h *Host) runningLocked() int {
	n := 0
	for _, p := range h.panes {
		if p.mine && !p.dead && p.window != "" {
			n++
		}
	}
	return n
}

// maybeExitedLocked emits PaneExited once for a dead pane this host launched or saw alive.
func (h *Host) maybeExitedLocked(pane string, p *paneState) {
	if p.dead && p.mine && !p.exitSent {
		p.exitSent = true
		// The memory policy hears of every end before the end is reported (a
		// burst's last end may return the burst's memory to the OS first): the last
		// running program's through the event queue, so the control reader never
		// waits for that return; the others here, where it only counts.
		if n := h.runningLocked(); n > 0 {
			h.mem.Ended(n)
		} else {
			h.events.push(core.HostEvent{Kind: lastEnded})
		}
		h.events.push(core.HostEvent{Pane: pane, Kind: core.PaneExited, ExitCode: p.exitCode, At: time.Now()})
	}
}

// checkPane refuses ids that are not tmux pane ids before they reach a command line.
func checkPane(pane string) error {
	if !paneIDPattern().MatchString(pane) {
		return fmt.Errorf("tmux: pane %q: %w", pane, ErrNoPane)
	}
	return nil
}

// paneErr turns tmux's "can't find pane" into ErrNoPane.
func paneErr(op, pane string, err error) error {
	if err != nil && strings.Contains(err.Error(), "can't find") {
		return fmt.Errorf("tmux: %s %s: %w", op, pane, ErrNoPane)
	}
	return fmt.Errorf("tmux: %s %s: %w", op, pane, err)
}

// sendChunk bounds the bytes of text per send-keys command.
const sendChunk = 2048

// SendText types text literally: its bytes reach the program unchanged (send-keys -H
// writes each byte as is, so no key names, quoting or tmux syntax can interfere).
func (h *Host) SendText(ctx context.Context, pane, text string) error {
	if err := checkPane(pane); err != nil {
		return err
	}
	if text == "" {
		return nil
	}
	var lines []string
	for len(text) > 0 {
		n := min(len(text), sendChunk)
		var b strings.Builder
		b.Grow(20 + 3*n)
		b.WriteString("send-keys -t " + pane + " -H")
		for i := 0; i < n; i++ {
			fmt.Fprintf(&b, " %02x", text[i])
		}
		lines = append(lines, b.String())
		text = text[n:]
	}
	if _, err := h.callAll(ctx, lines...); err != nil {
		return paneErr("send text to", pane, err)
	}
	return nil
}

// Paste gives the pane text through a paste buffer: tmux brackets it (-p) when the
// program asked for bracketed paste, and keeps line feeds as they are (-r), so without
// that mode it arrives as SendText types it (see core.Paster).
func (h *Host) Paste(ctx context.Context, pane, text string) error {
	if err := checkPane(pane); err != nil {
		return err
	}
	if text == "" {
		return nil
	}
	buf := "orcr-paste-" + strings.TrimPrefix(pane, "%")
	text = strings.ReplaceAll(text, "\x1b[201~", "")
	if _, err := h.callAll(ctx, "set-buffer -b "+buf+" -- "+quote(text),
		"paste-buffer -p -r -d -b "+buf+" -t "+pane); err != nil {
		return paneErr("paste text to", pane, err)
	}
	return nil
}

// SendKeys presses named keys (see core.Host).
func (h *Host) SendKeys(ctx context.Context, pane string, keys ...string) error {
	if err := checkPane(pane); err != nil {
		return err
	}
	if len(keys) == 0 {
		return nil
	}
	line := "send-keys -t " + pane
	for _, k := range keys {
		tk, ok := tmuxKey(k)
		if !ok {
			return fmt.Errorf("tmux: unknown key name %q", k)
		}
		line += " " + tk
	}
	if _, err := h.call(ctx, line); err != nil {
		return paneErr("send keys to", pane, err)
	}
	return nil
}

// Read captures the rendered screen (and scrollback tail with opts.Lines > 0) and the
// cursor, with one round trip of two pipelined commands. With opts.ANSI the lines keep
// their styles (capture-pane -e).
func (h *Host) Read(ctx context.Context, pane string, opts core.ReadOpts) (core.Screen, error) {
	if err := checkPane(pane); err != nil {
		return core.Screen{}, err
	}
	capture := "capture-pane -p -t " + pane
	if opts.ANSI {
		capture = "capture-pane -p -e -t " + pane
	}
	if opts.Lines > 0 {
		capture += " -S -" + strconv.Itoa(opts.Lines)
	}
	out, err := h.callAll(ctx,
		`display-message -p -t `+pane+` "#{cursor_x} #{cursor_y} #{pane_width} #{pane_height}"`,
		capture)
	if err != nil {
		return core.Screen{}, paneErr("read", pane, err)
	}
	var s core.Screen
	if len(out[0]) == 1 {
		f := strings.Fields(out[0][0])
		if len(f) == 4 {
			s.CursorX, _ = strconv.Atoi(f[0])
			s.CursorY, _ = strconv.Atoi(f[1])
			s.Cols, _ = strconv.Atoi(f[2])
			s.Rows, _ = strconv.Atoi(f[3])
		}
	}
	lines := out[1]
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if opts.Lines > 0 && len(lines) > opts.Lines {
		lines = lines[len(lines)-opts.Lines:]
	}
	s.Text = strings.Join(lines, "\n")
	return s, nil
}

// Resize sets the pane's window to cols×rows.
func (h *Host) Resize(ctx context.Context, pane string, cols, rows int) error {
	if err := checkPane(pane); err != nil {
		return err
	}
	if cols <= 0 || rows <= 0 {
		return fmt.Errorf("tmux: resize %s: bad size %dx%d", pane, cols, rows)
	}
	if _, err := h.call(ctx, fmt.Sprintf("resize-window -t %s -x %d -y %d", pane, cols, rows)); err != nil {
		return paneErr("resize", pane, err)
	}
	return nil
}

// Close kills the pane's window (and so its process group); a dead pane closes too.
func (h *Host) Close(ctx context.Context, pane string) error {
	if err := checkPane(pane); err != nil {
		return err
	}
	// Forget the pane first so its %window-close is not reported as PaneGone.
	h.mu.Lock()
	if p := h.panes[pane]; p != nil {
		p.stopWatch()
		delete(h.windows, p.window)
		delete(h.panes, pane)
	}
	h.mu.Unlock()
	if _, err := h.call(ctx, "kill-window -t "+pane); err != nil {
		return paneErr("close", pane, err)
	}
	return nil
}

// listFormat is the row format of List, tab-separated; the name is last because it is
// the only field that could hold spaces.
const listFormat = "#{pane_id}\t#{pane_pid}\t#{pane_dead}\t#{pane_dead_status}\t#{pane_dead_signal}\t#{window_id}\t#{" +
	placeholderOption + "}\t#{window_name}"

// List returns every agent pane of the orcr session, live or dead.
func (h *Host) List(ctx context.Context) ([]core.PaneInfo, error) {
	out, err := h.call(ctx, "list-panes -s -t "+session+" -F "+quote(listFormat))
	if err != nil {
		return nil, fmt.Errorf("tmux: list: %w", err)
	}
	var panes []core.PaneInfo
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, row := range out {
		f := strings.SplitN(row, "\t", 8)
		if len(f) != 8 || f[6] == "1" {
			continue
		}
		pid, _ := strconv.Atoi(f[1])
		info := core.PaneInfo{ID: f[0], Name: f[7], PID: pid}
		if f[2] == "1" {
			// Dead once tmux has reaped the process; until then the exit code is unknown
			// and the pane counts as alive.
			info.ExitCode = exitCode(f[3], f[4])
			info.Dead = info.ExitCode != nil
			if !info.Dead {
				h.unreaped[f[0]] = true
				h.signalReaper()
			}
		}
		panes = append(panes, info)
		p := h.paneLocked(f[0])
		p.window, p.name, p.pid = f[5], f[7], pid
		h.windows[f[5]] = f[0]
		if !info.Dead {
			p.mine = true
			h.watchExitLocked(f[0], p)
		} else if !p.dead {
			p.dead, p.exitCode = true, info.ExitCode
			h.maybeExitedLocked(f[0], p)
		}
	}
	return panes, nil
}

// exitCode is the exit status, or 128+signal for a pane killed by a signal.
func exitCode(status, signal string) *int {
	if n, err := strconv.Atoi(status); err == nil {
		return &n
	}
	if n, err := strconv.Atoi(signal); err == nil {
		n += 128
		return &n
	}
	return nil
}
