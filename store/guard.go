package store

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Badger opens its own files in the store (LOCK, where it writes its pid, the MANIFEST, the
// tables and logs) with flags orcr cannot change, following any symlink at their names. A
// store directory another user owns or may write to lets that user plant store/LOCK -> any
// file, and a server running as root then wrote its pid into that file. So before badger
// opens anything, the directory must be the server user's own real directory that nobody
// else may write to, and every entry in it a regular file of the same user.

// UnsafeError reports a store directory orcr will not open, with what to do.
type UnsafeError struct {
	Path, Why, Fix string
}

func (e *UnsafeError) Error() string {
	return fmt.Sprintf("%s %s: orcr will not follow links or trust files another user can plant inside its store; %s",
		e.Path, e.Why, e.Fix)
}

// checkOwned refuses a store directory that is a symlink, is not the server's user's own,
// is writable by group or others, or holds anything but regular files of that user.
func checkOwned(dir string) error {
	me := os.Geteuid()
	st, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	if st.Mode()&os.ModeSymlink != 0 {
		target, _ := os.Readlink(dir)
		return &UnsafeError{Path: dir, Why: fmt.Sprintf("is a symlink (to %s)", target),
			Fix: fmt.Sprintf("remove the link (rm %s) or point ORCR_HOME elsewhere", dir)}
	}
	if !st.IsDir() {
		return &UnsafeError{Path: dir, Why: "is not a directory",
			Fix: fmt.Sprintf("move it aside (mv %s %s.old) or point ORCR_HOME elsewhere", dir, dir)}
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != me {
		return &UnsafeError{Path: dir, Why: fmt.Sprintf("belongs to uid %d, not to this server's user (uid %d)", sys.Uid, me),
			Fix: fmt.Sprintf("take it over (chown -R %d %s; chmod 700 %s) or point ORCR_HOME elsewhere", me, dir, dir)}
	}
	if st.Mode().Perm()&0o022 != 0 {
		return &UnsafeError{Path: dir, Why: fmt.Sprintf("is writable by other users (mode %#o)", st.Mode().Perm()),
			Fix: fmt.Sprintf("make it yours alone (chmod 700 %s) or point ORCR_HOME elsewhere", dir)}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	for _, ent := range entries {
		p := filepath.Join(dir, ent.Name())
		info, err := os.Lstat(p)
		if err != nil {
			return fmt.Errorf("open store: %w", err)
		}
		rm := fmt.Sprintf("remove it (rm %s) or point ORCR_HOME elsewhere", p)
		switch {
		case info.Mode()&os.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			return &UnsafeError{Path: p, Why: fmt.Sprintf("is a symlink (to %s)", target), Fix: rm}
		case !info.Mode().IsRegular():
			return &UnsafeError{Path: p, Why: "is not a regular file", Fix: rm}
		}
		if sys, ok := info.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != me {
			return &UnsafeError{Path: p, Why: fmt.Sprintf("belongs to uid %d, not to this server's user (uid %d)", sys.Uid, me), Fix: rm}
		}
	}
	return nil
}
