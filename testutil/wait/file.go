package wait

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// Created returns once path exists, or an error after timeout. It is woken by the
// kernel (inotify on path's folder) when an entry is made there, not by a timer: a
// benchmark timing a program until it writes a file measures the program, not a poll's
// period. A Go timer under a millisecond sleeps a whole millisecond or more when the
// process is otherwise idle (the runtime waits in epoll with a timeout in ms: 200 µs
// slept 1.1 ms on session 14's machine), and a median over those polls moves in steps
// of a millisecond.
func Created(path string, timeout time.Duration) error {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return fmt.Errorf("inotify_init1: %w", err)
	}
	defer unix.Close(fd)
	if _, err := unix.InotifyAddWatch(fd, filepath.Dir(path), unix.IN_CREATE|unix.IN_MOVED_TO); err != nil {
		return fmt.Errorf("inotify_add_watch %s: %w", filepath.Dir(path), err)
	}
	deadline := time.Now().Add(timeout)
	buf := make([]byte, 4096)
	for {
		// Looked at after the watch is set, so an entry made before it is seen here
		// and one made after wakes the poll below.
		if _, err := os.Lstat(path); err == nil {
			return nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("%s not made within %v", path, timeout)
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, int(left/time.Millisecond)+1); err != nil && !errors.Is(err, unix.EINTR) {
			return fmt.Errorf("poll: %w", err)
		}
		// Drain what woke it; the name is checked by the Lstat above.
		for {
			if _, err := unix.Read(fd, buf); err != nil {
				break
			}
		}
	}
}
