package tmux

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"orcr/core"
	"orcr/sandbox/confine"
)

// A confined agent's pane runs orcr's launcher (`orcr sandbox exec --policy FILE --
// argv`), a whole orcr process whose start (the Go runtime, a 39 MB binary: 5–8 ms)
// was most of what a confined spawn cost over a plain one. The host keeps one spare:
// a launcher already started (confine.Await) in a window of a session of its own
// (spareSession, which no List, exit subscription or output reaches), connected to a
// socket the server listens on in a 0700 folder of orcr's home. A confined launch
// takes it when it is ready and of the launch's size: the window joins orcr's session
// where a new one would (move-window) and gets the launch's name while the launch
// (policy, argv, env, cwd) is handed over; the spare takes the folder and environment
// and execs through confine.Exec as the launcher would. The next spare starts off the
// spawn's path. No spare ready, or any failure before the spare accepted the launch:
// the spare is killed and the launch takes the normal path. A spare that ends unused
// (idle, its server gone) leaves a dead pane in its session, removed with the session
// by the next spare, the server's stop or the next server's start.

// spareSession names the sessions of the spares' windows, one each: "spare-" and a
// random suffix ("spare" alone: an older server's). It does not start with "orcr"
// (tmux resolves -t orcr by prefix when no session is named exactly that).
const spareSession = "spare"

// isSpareSession says name is a spare's session.
func isSpareSession(name string) bool {
	return name == spareSession || strings.HasPrefix(name, spareSession+"-")
}

// killSpareSessions ends every spare's session, this server's or an earlier one's.
func (h *Host) killSpareSessions(ctx context.Context) {
	out, err := h.call(ctx, `list-sessions -F "#{session_name}"`)
	if err != nil {
		return
	}
	for _, name := range out {
		if isSpareSession(name) {
			_, _ = h.call(ctx, "kill-session -t ="+quote(name))
		}
	}
}

// spare is a launcher waiting for its launch.
type spare struct {
	sess         string // its session's name
	window, pane string
	pid          int
	sock         string
	bin          string
	cols, rows   int
	session      int // the number of orcr's tmux session, which TMUX names

	ln   *net.UnixListener // where the launcher connects once started
	pidc chan int          // its pid, once tmux said it (closed when it failed to start)
	// ready is closed once the listener accepted (conn: the launcher's connection,
	// its peer checked) or gave up (conn nil).
	ready chan struct{}
	conn  *net.UnixConn
}

// accept takes the spare's connection: from its launcher only (the peer's uid and pid).
func (s *spare) accept() {
	defer close(s.ready)
	defer s.ln.Close() // unlinks the socket
	_ = s.ln.SetDeadline(time.Now().Add(confine.AwaitIdle))
	c, err := s.ln.AcceptUnix()
	if err != nil {
		return
	}
	pid, ok := <-s.pidc
	if !ok || confine.PeerIs(c, pid) != nil {
		c.Close()
		return
	}
	s.conn = c
}

// close ends the listener and the connection (the launcher, reading EOF, ends).
func (s *spare) close() {
	s.ln.Close()
	go func() {
		<-s.ready
		if s.conn != nil {
			s.conn.Close()
		}
	}()
}

// spareDir is the 0700 folder of the spares' sockets, beside the tmux socket.
func (h *Host) spareDir() string { return filepath.Join(filepath.Dir(h.socket), "spare") }

// launchSpare launches spec, a confined launch, in the spare: ok is false when there
// was none ready for it or the handoff failed before the launch was accepted (the
// spare is then gone, and the caller takes the normal path).
func (h *Host) launchSpare(ctx context.Context, spec core.LaunchSpec, name string, cols, rows int) (core.PaneInfo, bool, error) {
	bin, policy, cmd, ok := confine.ParseLauncherArgv(spec.Argv)
	if !ok || spec.Cwd == "" {
		return core.PaneInfo{}, false, nil
	}
	h.mu.Lock()
	s := h.takeSpareLocked(bin, cols, rows)
	h.mu.Unlock()
	if s == nil {
		return core.PaneInfo{}, false, nil
	}
	fail := func(why string, err error) (core.PaneInfo, bool, error) {
		h.log.Debug("tmux: spare launcher not used", "why", why, "err", err)
		h.killSpare(s)
		return core.PaneInfo{}, false, nil
	}
	// A spare still starting started before this launch: it is ready sooner than a
	// launcher started now would be.
	wait := time.NewTimer(spareStartWait)
	select {
	case <-s.ready:
		wait.Stop()
	case <-wait.C:
		return fail("not ready", nil)
	case <-ctx.Done():
		wait.Stop()
		return fail("not ready", ctx.Err())
	}
	conn := s.conn
	if conn == nil {
		return fail("no connection", nil)
	}
	defer conn.Close()
	var unset []string
	for _, v := range []string{"SHELL", "TERM_PROGRAM", "TERM_PROGRAM_VERSION"} {
		if !hasVar(spec.Env, v) {
			unset = append(unset, v)
		}
	}
	var env []string
	for _, kv := range spec.Env {
		if strings.IndexByte(kv, '=') > 0 {
			env = append(env, kv)
		}
	}
	msg, err := json.Marshal(confine.Launch{Policy: policy, Argv: cmd, Env: env, Cwd: spec.Cwd, Session: s.session, Unset: unset})
	if err != nil {
		return fail("launch", err)
	}
	c, err := h.conn(ctx)
	if err != nil {
		return fail("tmux", err)
	}
	// The window joins orcr's session while the launch is handed over: both in flight
	// at once, their answers awaited together. The spare's window has no option of
	// its own (remain-on-exit is the global one), so an agent that ends at once stays
	// a dead pane as any other.
	reqs, err := c.send(
		"move-window -d -s "+s.window+" -t "+session+":",
		"rename-window -t "+s.window+" "+quoteFormat(name),
		`display-message -p -t `+s.pane+` "#{session_name} #{session_id} #{window_width}x#{window_height}"`)
	if err != nil {
		return fail("move", err)
	}
	_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := conn.Write(append(msg, '\n')); err != nil {
		return fail("send", err)
	}
	var moveErr error
	var where []string
	for i, r := range reqs {
		out, err := r.wait(ctx)
		if err != nil && moveErr == nil {
			moveErr = err
		}
		if i == len(reqs)-1 {
			where = out
		}
	}
	reply, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || reply != "ok\n" {
		return fail("reply "+strings.TrimSpace(reply), err)
	}
	// Accepted: the agent runs. It must be where a new window would be, in orcr's
	// session at the launch's size (a window keeps its size when it moves); if not,
	// it is ended and the launch fails.
	f := strings.Fields(strings.Join(where, " "))
	if moveErr != nil || len(f) != 3 || f[0] != session || f[1] != "$"+strconv.Itoa(s.session) || f[2] != fmt.Sprintf("%dx%d", cols, rows) {
		h.killSpare(s)
		return core.PaneInfo{}, true, fmt.Errorf("tmux: launch in the spare launcher: moved to %q: %v", strings.Join(where, " "), moveErr)
	}
	info := core.PaneInfo{ID: s.pane, Name: name, PID: s.pid}
	h.mu.Lock()
	p := h.paneLocked(s.pane)
	p.window, p.name, p.pid, p.mine = s.window, name, s.pid, true
	h.windows[s.window] = s.pane
	h.maybeExitedLocked(s.pane, p)
	h.watchExitLocked(s.pane, p)
	if p.dead {
		info.Dead, info.ExitCode = true, p.exitCode
	}
	h.mu.Unlock()
	return info, true, nil
}

// spareStartWait bounds the wait for a spare still starting.
const spareStartWait = 250 * time.Millisecond

// killSpare ends a spare no launch will reach.
func (h *Host) killSpare(s *spare) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.close()
	if s.window != "" {
		_, _ = h.call(ctx, "kill-window -t "+s.window)
	}
}

// takeSpareLocked takes a spare for a launch of bin at cols×rows: the first one ready,
// else the one that started first; nil when none is of this launch. A spare ready
// without a connection (it ended idle, or failed to start) is ended on the way.
// h.mu is held.
func (h *Host) takeSpareLocked(bin string, cols, rows int) *spare {
	var ready, starting *spare
	keep := h.spares[:0]
	for _, s := range h.spares {
		if ready != nil || s.bin != bin || s.cols != cols || s.rows != rows {
			keep = append(keep, s)
			continue
		}
		select {
		case <-s.ready:
			if s.conn == nil {
				go h.killSpare(s)
				continue
			}
			ready = s
			continue
		default:
		}
		if starting == nil {
			starting = s
		}
		keep = append(keep, s)
	}
	h.spares = keep
	take := ready
	if take == nil {
		take = starting
	}
	if take == nil {
		return nil
	}
	h.spares = slices.DeleteFunc(h.spares, func(s *spare) bool { return s == take })
	return take
}

// refillSpare starts spares for launches of bin at cols×rows, off the spawn's path,
// until h.wantSpares are ready or starting; spares of another binary or size are
// ended. They start one after the other, each once the one before is ready (two
// launchers starting at once would each be ready later than the first alone).
//
// Two are kept by default: with one, a confined spawn that came within a launcher's
// start of the one before (spawns alternating, a loaded machine: the start is 7 ms
// quiet, 20–40 ms at load 20) waited for the spare started at the previous one — the
// tmux row of BenchmarkSandboxedSpawn at 1.45–2.0×.
//
// policy is the launch's policy file: a spare builds its ruleset ahead (`--prepare`,
// confine.Await), which the next launch of the same paths uses brought up to date.
func (h *Host) refillSpare(bin, policy string, cols, rows int) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	var old []*spare
	keep := h.spares[:0]
	for _, s := range h.spares {
		if s.bin == bin && s.cols == cols && s.rows == rows {
			keep = append(keep, s)
		} else {
			old = append(old, s)
		}
	}
	h.spares = keep
	if h.spareStarting || len(h.spares) >= h.wantSpares {
		h.mu.Unlock()
		if len(old) > 0 {
			go func() {
				for _, s := range old {
					h.killSpare(s)
				}
			}()
		}
		return
	}
	h.spareStarting = true
	h.wg.Add(1)
	h.mu.Unlock()
	go func() {
		defer h.wg.Done()
		for _, s := range old {
			h.killSpare(s)
		}
		for {
			s, err := h.startSpare(h.ctx, bin, policy, cols, rows)
			h.mu.Lock()
			if err == nil && h.closed {
				h.spareStarting = false
				h.mu.Unlock()
				h.killSpare(s)
				return
			}
			if err != nil {
				h.spareStarting = false
				h.mu.Unlock()
				h.log.Warn("tmux: start a spare launcher", "err", err)
				return
			}
			h.spares = append(h.spares, s)
			n := 0
			for _, o := range h.spares {
				if o.bin == bin && o.cols == cols && o.rows == rows {
					n++
				}
			}
			if n >= h.wantSpares {
				h.spareStarting = false
				h.mu.Unlock()
				return
			}
			h.mu.Unlock()
			select {
			case <-s.ready:
			case <-h.ctx.Done():
			}
		}
	}()
}

// startSpare starts a spare launcher in a fresh spareSession.
func (h *Host) startSpare(ctx context.Context, bin, policy string, cols, rows int) (*spare, error) {
	dir := h.spareDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, err
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	sock := filepath.Join(dir, fmt.Sprintf("%x.sock", b))
	if len(sock) > 100 {
		return nil, fmt.Errorf("spare socket path too long: %s", sock)
	}
	_ = os.Remove(sock)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return nil, err
	}
	s := &spare{sock: sock, bin: bin, cols: cols, rows: rows, ln: ln, pidc: make(chan int, 1), ready: make(chan struct{})}
	go s.accept()
	started := false
	defer func() {
		if !started {
			close(s.pidc)
			s.close()
		}
	}()
	argv := []string{bin, "sandbox", "exec", "--await", sock, "--server", strconv.Itoa(os.Getpid())}
	if policy != "" {
		argv = append(argv, "--prepare", policy)
	}
	// A session of its own, as one spare had: its one window moves out with the
	// launch and the session ends with it. (Two spares' windows in one session
	// crashed tmux 3.3a, a segfault in its server, when one moved out.)
	s.sess = fmt.Sprintf("%s-%x", spareSession, b[:4])
	var line strings.Builder
	fmt.Fprintf(&line, "new-session -d -s %s -x %d -y %d", s.sess, cols, rows)
	line.WriteString(` -P -F "#{pane_id} #{pane_pid} #{window_id} #{window_width}x#{window_height}" --`)
	for _, a := range argv {
		line.WriteString(" " + quote(a))
	}
	out, err := h.callAll(ctx, line.String(), `display-message -p -t =`+session+`: "#{session_id}"`)
	if err != nil {
		_, _ = h.call(ctx, "kill-session -t ="+s.sess)
		return nil, err
	}
	f := strings.Fields(strings.Join(out[0], " "))
	if len(f) != 4 {
		return nil, fmt.Errorf("new-session: unexpected reply %q", out[0])
	}
	if f[3] != fmt.Sprintf("%dx%d", cols, rows) {
		// A window keeps its size when it moves: the launch would be refused.
		_, _ = h.call(ctx, "kill-window -t "+f[2])
		return nil, fmt.Errorf("spare window of %s, not %dx%d", f[3], cols, rows)
	}
	pid, err := strconv.Atoi(f[1])
	if err != nil {
		return nil, fmt.Errorf("new-session: unexpected reply %q", out[0])
	}
	sid, err := strconv.Atoi(strings.TrimPrefix(strings.Join(out[1], ""), "$"))
	if err != nil {
		return nil, fmt.Errorf("orcr's session id: unexpected reply %q", out[1])
	}
	s.window, s.pane, s.pid, s.session = f[2], f[0], pid, sid
	started = true
	s.pidc <- pid
	return s, nil
}

// clearSpares ends the spare session and sockets a previous server left (after a kill
// -9 its spare ends by itself within seconds; this does not wait for that).
func (h *Host) clearSpares(ctx context.Context) {
	h.killSpareSessions(ctx)
	if ents, err := os.ReadDir(h.spareDir()); err == nil {
		for _, e := range ents {
			if strings.HasSuffix(e.Name(), ".sock") {
				_ = os.Remove(filepath.Join(h.spareDir(), e.Name()))
			}
		}
	}
}
