package herdr

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"
)

// InstallHint is the pointer printed when herdr is missing (reference §6).
const InstallHint = "install herdr: curl -fsSL https://herdr.dev/install.sh | sh  (or Homebrew/mise; see https://herdr.dev), " +
	"or point config herdr.bin or $ORCR_HERDR_BIN at the binary"

// ErrNotInstalled: no herdr binary was found (or the chosen one is missing).
var ErrNotInstalled = errors.New("herdr not found")

// FindBin locates the herdr binary: config `herdr.bin`, then $ORCR_HERDR_BIN, then
// $PATH. why says which source decided. A source that names a missing binary is an
// error rather than a silent fall-through, because the user chose it; its message
// names the setting, and the caller says how to fix it.
func FindBin(configBin string) (path string, why string, err error) {
	try := func(name, why string) (string, string, error) {
		p, err := lookExecutable(name)
		if err != nil {
			return "", why, fmt.Errorf("%w: %s names %q, which is not an executable (%v)",
				ErrNotInstalled, why, name, err)
		}
		return p, why, nil
	}
	if configBin != "" {
		return try(configBin, "config herdr.bin")
	}
	if env := os.Getenv("ORCR_HERDR_BIN"); env != "" {
		return try(env, "$ORCR_HERDR_BIN")
	}
	if p, err := exec.LookPath("herdr"); err == nil {
		abs, _ := filepath.Abs(p)
		return abs, "found on $PATH", nil
	}
	return "", "", fmt.Errorf("%w: not in config herdr.bin, $ORCR_HERDR_BIN or $PATH; %s", ErrNotInstalled, InstallHint)
}

func lookExecutable(name string) (string, error) {
	if !strings.Contains(name, "/") {
		return exec.LookPath(name)
	}
	fi, err := os.Stat(name)
	if err != nil {
		return "", err
	}
	if fi.IsDir() || fi.Mode()&0o111 == 0 {
		return "", errors.New("not executable")
	}
	return filepath.Abs(name)
}

var sessionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`) })

// validSession enforces herdr's session-name rules and refuses the user's default
// session, which orcr must never touch.
func validSession(s string) error {
	if !sessionRE().MatchString(s) || s == "." || s == ".." {
		return fmt.Errorf("herdr session name %q: use 1-64 of [A-Za-z0-9._-]", s)
	}
	if s == "default" {
		return errors.New(`herdr session "default" is the user's own session; orcr uses a named session such as "orcr"`)
	}
	return nil
}

// getenv reads key from env (KEY=VALUE list), the last assignment winning.
func getenv(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// SocketPath is herdr's API socket for a named session (reference §1.1):
// $XDG_CONFIG_HOME/herdr/sessions/NAME/herdr.sock, else under $HOME/.config/herdr.
// env is the environment to resolve against (nil: this process's).
func SocketPath(env []string, session string) (string, error) {
	if env == nil {
		env = os.Environ()
	}
	if err := validSession(session); err != nil {
		return "", err
	}
	dir := getenv(env, "XDG_CONFIG_HOME")
	if dir != "" {
		dir = filepath.Join(dir, "herdr")
	} else {
		home := getenv(env, "HOME")
		if home == "" {
			return "", errors.New("herdr socket: neither $XDG_CONFIG_HOME nor $HOME is set")
		}
		dir = filepath.Join(home, ".config", "herdr")
	}
	return filepath.Join(dir, "sessions", session, "herdr.sock"), nil
}

// serverEnv is env without the variables that would point a child herdr at another
// server or make it think it runs inside a herdr pane (reference §1.6).
func serverEnv(env []string) []string {
	out := make([]string, 0, len(env))
	for _, kv := range env {
		k, _, _ := strings.Cut(kv, "=")
		switch k {
		case "HERDR_SOCKET_PATH", "HERDR_CLIENT_SOCKET_PATH", "HERDR_ENV", "HERDR_SESSION",
			"HERDR_WORKSPACE_ID", "HERDR_TAB_ID", "HERDR_PANE_ID":
			continue
		}
		out = append(out, kv)
	}
	return out
}

// startServer runs `herdr --session NAME server` detached (own session, null stdio)
// so it outlives orcr, then waits until it answers ping. With a socket that is not
// the session's own path, it runs `herdr server` with HERDR_SOCKET_PATH instead.
// The returned channel is closed when the started process exits; a goroutine reaps
// it and ends with it (herdr outlives orcr by design, so nothing else stops it).
func startServer(ctx context.Context, o Options, c *client, sessionSocket string) error {
	args := []string{"--session", o.Session, "server"}
	env := serverEnv(o.Env)
	if o.SocketPath != sessionSocket {
		args = []string{"server"}
		env = append(env, "HERDR_SOCKET_PATH="+o.SocketPath, "HERDR_SESSION="+o.Session)
	}
	cmd := exec.Command(o.Bin, args...)
	cmd.Env = env
	cmd.Dir = "/"
	// stderr goes to a file, not a pipe: the server outlives orcr and must not get
	// EPIPE on its banner or errors once orcr is gone.
	errPath := filepath.Join(o.StateDir, "herdr-server.stderr")
	errFile, err := os.OpenFile(errPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("herdr: server log: %w", err)
	}
	defer errFile.Close()
	cmd.Stderr = errFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("herdr: start %s %s: %w", o.Bin, strings.Join(args, " "), err)
	}
	o.Logger.Info("started herdr server", "bin", o.Bin, "session", o.Session, "pid", cmd.Process.Pid)
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	deadline := time.Now().Add(15 * time.Second)
	delay := 10 * time.Millisecond
	for {
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := c.call(pctx, "ping", nil, nil)
		cancel()
		if err == nil {
			return nil
		}
		select {
		case werr := <-exited:
			// "already running" (another orcr won the race) is fine if it answers now.
			if c.call(ctx, "ping", nil, nil) == nil {
				return nil
			}
			b, _ := os.ReadFile(errPath)
			return fmt.Errorf("herdr: server exited during start (%v): %s", werr, firstLine(string(b)))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("herdr: server did not answer on %s within 15s: %w", o.SocketPath, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("herdr: waiting for the server: %w", ctx.Err())
		case <-time.After(delay):
		}
		delay = min(delay*2, 200*time.Millisecond)
	}
}

func firstLine(s string) string {
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" {
			return l
		}
	}
	return "(no output)"
}

// Probe reports what answers on the session's socket without starting or changing
// anything (for `orcr doctor`): herdr's version and protocol, or ErrUnavailable
// when nothing runs there, or ErrProtocol when it speaks an unsupported protocol.
func Probe(ctx context.Context, o Options) (version string, protocol int, err error) {
	if o.Session == "" {
		o.Session = "orcr"
	}
	if o.SocketPath == "" {
		if o.SocketPath, err = SocketPath(o.Env, o.Session); err != nil {
			return "", 0, err
		}
	}
	h := &Host{opts: o, c: &client{socket: o.SocketPath}}
	if err := h.checkVersion(ctx); err != nil {
		return h.version, h.protocol, err
	}
	return h.version, h.protocol, nil
}
