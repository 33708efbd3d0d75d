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
// before it is needed (the tmux host keeps one): it connects to SOCKET, in a folder
// only its user may enter, where its server listens, checks the listener is the process
// PID of its user (the orcr server: SO_PEERCRED, so no other process can hand it a
// launch), and waits for one Launch on that connection; it answers "ok" once it has
// taken the launch's folder and environment, and then is the launcher: Exec with the
// launch's policy and argv. The connection is the server's word that a spare is ready
// (no polling on either side). It ends with ErrAwaitEnded when no launch came within
// idle or its server closed the connection (stopped, or gone).
//
// prepare, when not empty, is a policy file like the launch's to come (the server's
// last confined launch's): its ruleset is built once the connection is made, before
// the launch comes, and the launch's policy, if it has the same paths, ports and
// folders, is applied with it brought up to date (Rulesets.restrictHere) — the paths'
// opens and a folder's entry-by-entry rules (~500 for a shared /tmp) off the spawn's
// path.
func Await(sock string, server int, prepare string, idle time.Duration, stderr io.Writer) error {
	debug.SetGCPercent(-1)
	if err := privateDir(filepath.Dir(sock)); err != nil {
		return err
	}
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		return fmt.Errorf("sandbox: await: %w", err)
	}
	defer c.Close()
	if err := peerIs(c, server); err != nil {
		return err
	}
	_ = c.SetDeadline(time.Now().Add(idle))
	var pre *Rulesets
	if prepare != "" {
		// The launch waits in the socket meanwhile: this started before it.
		if p, err := Load(prepare); err == nil {
			pre = &Rulesets{}
			if !pre.Prepare(p) {
				pre = nil
			}
		}
	}
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		var ne net.Error
		if errors.Is(err, io.EOF) || errors.As(err, &ne) && ne.Timeout() {
			return ErrAwaitEnded
		}
		return fmt.Errorf("sandbox: await: read launch: %w", err)
	}
	l, err := take(line)
	if err != nil {
		fmt.Fprintf(c, "error: %v\n", err)
		return err
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, "ok\n"); err != nil {
		return fmt.Errorf("sandbox: await: %w", err)
	}
	c.Close()
	return execWith(l.Policy, l.Argv, stderr, pre)
}

// peerIs checks the other end of c is process pid of this user.
func peerIs(c *net.UnixConn, pid int) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil {
		return err
	}
	if credErr != nil {
		return fmt.Errorf("sandbox: await: %w", credErr)
	}
	if cred.Uid != uint32(os.Getuid()) || int(cred.Pid) != pid {
		return fmt.Errorf("sandbox: await: the socket's other end is pid %d of uid %d, not the server %d", cred.Pid, cred.Uid, pid)
	}
	return nil
}

// PeerIs checks the other end of c is process pid of this user (the server's check
// of the spare that connected).
func PeerIs(c *net.UnixConn, pid int) error { return peerIs(c, pid) }

// take reads one Launch and takes its folder and environment.
func take(line []byte) (Launch, error) {
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
