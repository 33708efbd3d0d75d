package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"orcr/core/socket"
	"orcr/pty"
)

// The dashboard hosts the server in-process; its embedded-host agents are children of
// the dashboard's process. "Keep them running" on quit hands their pty masters to a
// new background `orcr serve` (file descriptors inherited across exec), which adopts
// them: the programs never notice. The engine's restart reconciliation then finds
// the agents' panes under their old ids and re-attaches them.

const handoffEnv = "ORCR_PTY_HANDOFF"

// handoffFile is what the new server reads: the panes, in the order of their fds
// (the first at fd 3), and the last pane id the dashboard's host gave out, so new
// panes do not reuse the ids of ended agents' panes.
type handoffFile struct {
	Panes  []pty.Handoff `json:"panes"`
	LastID int64         `json:"lastId"`
}

// handedOff says where the agents went.
type handedOff struct {
	PID    int    // the background server
	Panes  int    // agents handed over
	Socket string // where it serves
	Log    string // its log
}

// handOff exports the embedded host's live panes (if the host is the embedded one),
// closes s (releasing the store and the lock; the host then owns no live panes, so
// nothing dies) and starts a background server that adopts them and takes over the
// home. It closes s in every case.
func handOff(ctx context.Context, s *server) (handedOff, error) {
	// On the embedded host the panes' masters go along; any other host keeps its panes
	// itself (tmux, herdr), so the new server only has to take over the home — its
	// listeners, schedules and runs' autopilots — and reconcile the panes it finds.
	var panes []pty.Handoff
	var lastID int64
	if ph, ok := s.host.(*pty.Host); ok {
		var err error
		if panes, err = ph.Export(); err != nil {
			s.close(ctx)
			return handedOff{}, fmt.Errorf("export panes: %w", err)
		}
		lastID = ph.LastID()
	}
	files := make([]*os.File, 0, len(panes))
	for _, p := range panes {
		files = append(files, p.Master)
	}
	defer func() {
		for _, f := range files {
			f.Close() // the child has its copies (or never will)
		}
	}()
	// Release the store and lock before the new server takes them.
	s.close(ctx)
	res := handedOff{Panes: len(panes), Socket: socket.SocketPath(s.home), Log: filepath.Join(s.home, "orcr.log")}
	path := ""
	if len(panes) > 0 || lastID > 0 {
		path = filepath.Join(s.home, "handoff.json")
		b, err := json.Marshal(handoffFile{Panes: panes, LastID: lastID})
		if err != nil {
			return res, fmt.Errorf("encode hand-off: %w", err)
		}
		if err := socket.WriteFileNoFollow(path, b, 0o600); err != nil {
			return res, fmt.Errorf("write hand-off: %w", err)
		}
	}
	self, err := stableSelf(s.home) // under `go run` the build dir vanishes when it exits
	if err != nil {
		return res, fmt.Errorf("find own binary: %w", err)
	}
	devnull, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		return res, err
	}
	defer devnull.Close()
	// The server's own messages (a failed start) go to a file the error can quote.
	errPath := filepath.Join(s.home, "serve.stderr")
	errFile, err := socket.OpenNoFollow(errPath, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return res, fmt.Errorf("open %s: %w", errPath, err)
	}
	defer errFile.Close()
	cmd := exec.Command(self, serveArgs(s.httpFlag)...)
	env := make([]string, 0, len(os.Environ())+2)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, handoffEnv+"=") && !strings.HasPrefix(kv, "ORCR_HOME=") {
			env = append(env, kv)
		}
	}
	cmd.Env = append(env, "ORCR_HOME="+s.home)
	if path != "" {
		cmd.Env = append(cmd.Env, handoffEnv+"="+path)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = devnull, devnull, errFile
	cmd.ExtraFiles = files
	// Its own session: the terminal the dashboard ran in may close.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		if path != "" {
			os.Remove(path)
		}
		return res, fmt.Errorf("start background server: %w", err)
	}
	res.PID = cmd.Process.Pid
	defer cmd.Process.Release()
	// Wait until it answers so the user's next command finds it.
	deadline := time.Now().Add(10 * time.Second)
	for delay := 5 * time.Millisecond; time.Now().Before(deadline); delay = min(2*delay, 100*time.Millisecond) {
		if c, err := socket.Dial(ctx, res.Socket, ""); err == nil {
			c.Close()
			return res, nil
		}
		var ws syscall.WaitStatus
		if pid, _ := syscall.Wait4(res.PID, &ws, syscall.WNOHANG, nil); pid == res.PID {
			msg, _ := os.ReadFile(errPath)
			return res, fmt.Errorf("background server exited (%s): %s; see %s", exitText(ws), strings.TrimSpace(string(msg)), res.Log)
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(delay):
		}
	}
	return res, fmt.Errorf("background server (pid %d) did not answer within 10s; see %s", res.PID, res.Log)
}

// serveArgs are the background server's arguments: the web gateway's --http, when
// the dashboard was given one, goes along (the config's [http] listen it reads itself).
func serveArgs(httpFlag string) []string {
	if httpFlag == "" {
		return []string{"serve"}
	}
	return []string{"serve", "--http", httpFlag}
}

func exitText(ws syscall.WaitStatus) string {
	if ws.Signaled() {
		return "signal " + ws.Signal().String()
	}
	return fmt.Sprintf("exit %d", ws.ExitStatus())
}

// adoptedPanes reads a hand-off left by a quitting dashboard (see handOff), once,
// with the id floor for new panes. Without one it returns nothing.
func adoptedPanes() ([]pty.Handoff, int64, error) {
	path := os.Getenv(handoffEnv)
	if path == "" {
		return nil, 0, nil
	}
	os.Unsetenv(handoffEnv) // agents launched later must not inherit it
	b, err := socket.ReadFileNoFollow(path)
	os.Remove(path)
	if err != nil {
		return nil, 0, fmt.Errorf("read hand-off: %w", err)
	}
	var hf handoffFile
	if err := json.Unmarshal(b, &hf); err != nil {
		return nil, 0, fmt.Errorf("decode hand-off: %w", err)
	}
	for i := range hf.Panes {
		fd := 3 + i
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); err != nil {
			return nil, 0, fmt.Errorf("hand-off: no file descriptor %d for pane %s: %w", fd, hf.Panes[i].ID, err)
		}
		syscall.CloseOnExec(fd) // exec cleared it; no later child may inherit a master
		hf.Panes[i].Master = os.NewFile(uintptr(fd), "pty-master-"+hf.Panes[i].ID)
	}
	return hf.Panes, hf.LastID, nil
}
