package socket

import (
	"os"
	"syscall"
	"time"
)

// SocketCheckEvery is how often a running server checks that its socket is still the one it
// made. A deleted socket (a tmp cleaner, a user's rm) left the server unreachable for good;
// the check is a stat, so it costs nothing worth an inotify watch.
var SocketCheckEvery = 2 * time.Second

// watchSocket recreates the socket when the file at the path is gone or is no longer the one
// the listener was bound to, until the server stops.
func (s *Server) watchSocket() {
	defer s.wg.Done()
	ino := socketInode(s.path)
	t := time.NewTicker(SocketCheckEvery)
	defer t.Stop()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		if cur := socketInode(s.path); cur != 0 && cur == ino {
			continue
		}
		ln, err := listenAt(s.path)
		if err != nil {
			s.log.Error("recreate deleted socket", "path", s.path, "err", err)
			continue
		}
		s.mu.Lock()
		if s.ctx.Err() != nil {
			s.mu.Unlock()
			ln.Close()
			return
		}
		old := s.ln
		s.ln = ln
		old.SetUnlinkOnClose(false) // the path is the new socket's now
		old.Close()                 // Serve's Accept on it returns and picks up the new one
		s.mu.Unlock()
		ino = socketInode(s.path)
		s.log.Warn("socket was deleted or replaced; recreated it", "path", s.path)
	}
}

// socketInode is the inode of the socket at path, 0 when there is none.
func socketInode(path string) uint64 {
	st, err := os.Lstat(path)
	if err != nil || st.Mode()&os.ModeSocket == 0 {
		return 0
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return sys.Ino
	}
	return 0
}
