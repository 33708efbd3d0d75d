package confine

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Launch is what the server sends a waiting launcher (Await): the launch it would
// otherwise have put on the launcher's command line, and the environment and folder a
// new pane would have been given.
type Launch struct {
	Policy string   `json:"policy"`
	Argv   []string `json:"argv"`
	Env    []string `json:"env"`
	Cwd    string   `json:"cwd"`
	// Session is the number of the tmux session the pane now belongs to: TMUX names
	// the one the pane started in.
	Session int `json:"session"`
	// Unset are variables the host's pane adds that the launch must not see unless
	// Env sets them (tmux's SHELL, TERM_PROGRAM, TERM_PROGRAM_VERSION).
	Unset []string `json:"unset,omitempty"`
}

// AwaitIdle is how long a waiting launcher waits for its launch before it exits.
const AwaitIdle = 10 * time.Minute

// ErrAwaitEnded is Await's return when it ends without a launch (idle, or its
// server gone): nothing was exec'd, and nothing failed.
var ErrAwaitEnded = errors.New("sandbox: no launch came")

// Await is `orcr sandbox exec --await SOCKET --server PID`, a spare launcher started
// before it is needed (the tmux host keeps one): it listens on SOCKET, in a folder only
// its user may enter, for one Launch from the process PID (the orcr server: the peer's
// uid and pid are checked, so neither another user nor an agent of this one can hand it
// a launch), answers "ok" once it has taken the launch's folder and environment, and
// then is the launcher: Exec with the launch's policy and argv. It ends with
// ErrAwaitEnded when no launch came within idle or its server is gone.
func Await(sock string, server int, idle time.Duration, stderr io.Writer) error {
	debug.SetGCPercent(-1)
	if err := privateDir(filepath.Dir(sock)); err != nil {
		return err
	}
	_ = os.Remove(sock)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return fmt.Errorf("sandbox: await: %w", err)
	}
	defer ln.Close() // unlinks sock
	end := time.Now().Add(idle)
	for {
		if time.Now().After(end) {
			return ErrAwaitEnded
		}
		if err := syscall.Kill(server, 0); errors.Is(err, syscall.ESRCH) {
			return ErrAwaitEnded
		}
		_ = ln.SetDeadline(time.Now().Add(2 * time.Second))
		conn, err := ln.AcceptUnix()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("sandbox: await: %w", err)
		}
		l, err := receive(conn, server)
		if errors.Is(err, errNotServer) {
			conn.Close()
			continue
		}
		if err != nil {
			fmt.Fprintf(conn, "error: %v\n", err)
			conn.Close()
			return err
		}
		if _, err := io.WriteString(conn, "ok\n"); err != nil {
			conn.Close()
			return fmt.Errorf("sandbox: await: %w", err)
		}
		conn.Close()
		ln.Close()
		return Exec(l.Policy, l.Argv, stderr)
	}
}

var errNotServer = errors.New("sandbox: await: the peer is not the server")

// receive reads one Launch from conn after checking its peer is server, and takes its
// folder and environment.
func receive(conn *net.UnixConn, server int) (Launch, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return Launch{}, err
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return Launch{}, err
	}
	if credErr != nil || cred.Uid != uint32(os.Getuid()) || int(cred.Pid) != server {
		return Launch{}, errNotServer
	}
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(conn).ReadBytes('\n')
	if err != nil {
		return Launch{}, fmt.Errorf("sandbox: await: read launch: %w", err)
	}
	var l Launch
	if err := json.Unmarshal(line, &l); err != nil {
		return Launch{}, fmt.Errorf("sandbox: await: launch: %w", err)
	}
	if l.Policy == "" || len(l.Argv) == 0 || l.Cwd == "" {
		return Launch{}, errors.New("sandbox: await: a launch needs a policy, a command and a folder")
	}
	if err := os.Chdir(l.Cwd); err != nil {
		return Launch{}, fmt.Errorf("sandbox: await: %w", err)
	}
	env := LaunchEnv(os.Environ(), l)
	os.Clearenv()
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		_ = os.Setenv(k, v)
	}
	return l, nil
}

// LaunchEnv is the environment of a launch in a spare pane whose own is pane: the
// pane's (what the host adds to every pane: TMUX, TMUX_PANE, TERM…) less l.Unset,
// TMUX naming l.Session, PWD (when the pane has one) the launch's folder, then l.Env
// over it — what a pane started for the launch would have had.
func LaunchEnv(pane []string, l Launch) []string {
	set := map[string]bool{}
	for _, kv := range l.Env {
		k, _, _ := strings.Cut(kv, "=")
		set[k] = true
	}
	var env []string
	for _, kv := range pane {
		k, v, _ := strings.Cut(kv, "=")
		if set[k] || contains(l.Unset, k) {
			continue
		}
		switch k {
		case "TMUX":
			if i := strings.LastIndexByte(v, ','); i >= 0 {
				v = v[:i+1] + strconv.Itoa(l.Session)
			}
		case "PWD":
			v = l.Cwd
		}
		env = append(env, k+"="+v)
	}
	return append(env, l.Env...)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// privateDir checks dir is a folder of this user's that no one else may enter.
func privateDir(dir string) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("sandbox: await: %w", err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !st.IsDir() || !ok || sys.Uid != uint32(os.Getuid()) || st.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("sandbox: await: %s is not a folder of this user's closed to others", dir)
	}
	return nil
}
