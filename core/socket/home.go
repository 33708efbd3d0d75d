package socket

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// homeFiles are the names the server creates or opens in its home. None may be a symlink: a
// link planted there would turn the server's writes (the pid into orcr.lock, log lines into
// orcr.log) into writes to whatever it points at, with the server's rights.
var homeFiles = []string{"orcr.lock", "orcr.log", "orcr.sock", "handoff.json", "serve.stderr", "tmux.sock"}

// homeDirs are the directories the server keeps in its home. Each must be a real directory
// of the server's user that nobody else may write to: files are created inside them by
// programs orcr cannot make refuse links (badger in store/, tmux, git worktrees), so a
// directory another user can write to is a place to plant one.
var homeDirs = []string{"store", "agents", "bin", "worktrees", "runs", "herdr"}

// CheckHome refuses a home the server's user does not own, or one holding a symlink where the
// server keeps a file. A home owned by another user lets that user plant links and sockets,
// so it is refused rather than repaired.
func CheckHome(home string) error {
	st, err := os.Stat(home)
	if err != nil {
		return fmt.Errorf("home: %w", err)
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if !st.IsDir() {
		return fmt.Errorf("ORCR_HOME %s is not a directory", home)
	}
	if me := os.Geteuid(); int(sys.Uid) != me {
		return fmt.Errorf("ORCR_HOME %s belongs to %s, not to this server's user %s: another user could plant files there; "+
			"use a home you own (ORCR_HOME=DIR) or take this one over (chown -R %d %s)",
			home, userName(int(sys.Uid)), userName(me), me, home)
	}
	// The home's own mode is not refused: AcquireLock makes a home this user owns 0700 once
	// this check passes. What another user may already have made inside it is checked here.
	for _, name := range homeDirs {
		if err := checkHomeDir(filepath.Join(home, name)); err != nil {
			return err
		}
	}
	for _, name := range homeFiles {
		p := filepath.Join(home, name)
		lst, err := os.Lstat(p)
		if err != nil {
			continue
		}
		if lst.Mode()&os.ModeSymlink != 0 {
			target, _ := os.Readlink(p)
			return fmt.Errorf("%s is a symlink (to %s); orcr never follows links in its home: remove it (rm %s)", p, target, p)
		}
		if ls, ok := lst.Sys().(*syscall.Stat_t); ok && int(ls.Uid) != os.Geteuid() {
			return fmt.Errorf("%s belongs to %s, not to this server's user: remove it (rm %s)", p, userName(int(ls.Uid)), p)
		}
	}
	return nil
}

// checkHomeDir refuses a directory of the home that is a symlink, another user's, or
// writable by others; a missing one is fine (the server makes it, 0700).
func checkHomeDir(p string) error {
	lst, err := os.Lstat(p)
	if err != nil {
		return nil
	}
	if lst.Mode()&os.ModeSymlink != 0 {
		target, _ := os.Readlink(p)
		return fmt.Errorf("%s is a symlink (to %s); orcr never follows links in its home: remove it (rm %s) or point ORCR_HOME elsewhere",
			p, target, p)
	}
	if !lst.IsDir() {
		return fmt.Errorf("%s is not a directory: move it aside (mv %s %s.old) or point ORCR_HOME elsewhere", p, p, p)
	}
	if ls, ok := lst.Sys().(*syscall.Stat_t); ok && int(ls.Uid) != os.Geteuid() {
		return fmt.Errorf("%s belongs to %s, not to this server's user %s: another user could plant links in it; "+
			"take it over (chown -R %d %s; chmod 700 %s) or point ORCR_HOME elsewhere",
			p, userName(int(ls.Uid)), userName(os.Geteuid()), os.Geteuid(), p, p)
	}
	if lst.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("%s is writable by other users (mode %#o): they could plant links in it; "+
			"make it yours alone (chmod 700 %s) or point ORCR_HOME elsewhere", p, lst.Mode().Perm(), p)
	}
	return nil
}

func userName(uid int) string {
	if u, err := user.LookupId(strconv.Itoa(uid)); err == nil {
		return fmt.Sprintf("uid %d (%s)", uid, u.Username)
	}
	return fmt.Sprintf("uid %d", uid)
}

// OpenNoFollow opens a file in the home without following a symlink at its name.
func OpenNoFollow(path string, flag int, perm os.FileMode) (*os.File, error) {
	f, err := os.OpenFile(path, flag|syscall.O_NOFOLLOW, perm)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%s is a symlink; orcr never follows links in its home: remove it: %w", path, err)
	}
	return f, err
}

// WriteFileNoFollow is os.WriteFile through OpenNoFollow.
func WriteFileNoFollow(path string, b []byte, perm os.FileMode) error {
	f, err := OpenNoFollow(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// ReadFileNoFollow is os.ReadFile through OpenNoFollow.
func ReadFileNoFollow(path string) ([]byte, error) {
	f, err := OpenNoFollow(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
