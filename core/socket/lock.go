// Package socket carries declared methods over orcr's Unix socket: a Server that serves
// a table of handlers (wire.Handler: the kernel's and each feature's) as
// newline-delimited JSON, generic over the declarations; a Client, the socket
// wire.Transport; and InProcess, the transport over the same table that the dashboard
// hosting the server uses, so callers cannot tell in-process from remote. It holds no
// method of its own. It also owns the per-home lock that keeps two servers off one
// ORCR_HOME.
package socket

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// Lock is the exclusive server lock of one ORCR_HOME ($ORCR_HOME/orcr.lock, flock).
// The kernel drops it when the process dies, even by kill -9, so a stale lock never
// blocks a restart.
type Lock struct {
	f *os.File
}

// ErrLocked means another server holds the home.
var ErrLocked = errors.New("another orcr server is running for this ORCR_HOME")

// AcquireLock takes the home's server lock without waiting. It creates the home with
// mode 0700.
func AcquireLock(home string) (*Lock, error) {
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, fmt.Errorf("create home: %w", err)
	}
	if err := CheckHome(home); err != nil {
		return nil, err
	}
	if err := os.Chmod(home, 0o700); err != nil {
		return nil, fmt.Errorf("chmod home: %w", err)
	}
	path := filepath.Join(home, "orcr.lock")
	f, err := OpenNoFollow(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := io.ReadAll(io.LimitReader(f, 32))
		f.Close()
		return nil, lockedErr(home, strings.TrimSpace(string(b)))
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return &Lock{f: f}, nil
}

// Release drops the lock.
func (l *Lock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}

// Held reports whether some process holds the home's lock right now.
func Held(home string) bool {
	f, err := OpenNoFollow(filepath.Join(home, "orcr.lock"), os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}

// SocketPath is the socket of a home.
func SocketPath(home string) string { return filepath.Join(home, "orcr.sock") }

// lockedErr says who holds the home. While that server's socket is missing (deleted under it)
// it says so: the server recreates it within SocketCheckEvery, so retrying is the fix, not
// starting another.
func lockedErr(home, pid string) error {
	err := ErrLocked
	if pid != "" {
		err = fmt.Errorf("%w (pid %s)", ErrLocked, pid)
	}
	if _, serr := os.Lstat(SocketPath(home)); errors.Is(serr, os.ErrNotExist) {
		err = fmt.Errorf("%w; its socket %s is missing and it recreates it within %s: retry", err, SocketPath(home), SocketCheckEvery)
	}
	return err
}
