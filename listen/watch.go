package listen

import (
	"errors"
	"os"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The listener folder is rescanned every Rescan (5 s), which was also how long an edit
// took to apply: a user who saved a listener waited up to 5 s to see it run, fail to
// parse, or stop. So the folder is watched (inotify) as well, and a change to it is
// rescanned at once (after watchSettle, so the several events of one save are one
// rescan); the timed rescan stays, for a folder made after the server started (it is
// watched from the first rescan that finds it) and for file systems inotify does not
// see changes on (NFS written from another machine).

// watchSettle is how long after a change the folder is rescanned: the events of one
// save (create, write, close; an editor's rename) come within it.
const watchSettle = 50 * time.Millisecond

// dirEvents are the changes to a folder's entries a listener file's save, rename or
// removal makes, and the folder itself going.
const dirEvents = unix.IN_CLOSE_WRITE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_CREATE |
	unix.IN_DELETE | unix.IN_ATTRIB | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF

// dirWatch watches one folder; changed gets a value (never blocking) after any event.
type dirWatch struct {
	f    *os.File
	done chan struct{} // closed when the reader has ended (the folder went, or close)
}

// watchDir starts watching dir; changed is signalled after each batch of events. It
// fails when dir does not exist (the timed rescan finds it later).
func watchDir(dir string, changed chan<- struct{}) (*dirWatch, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, err
	}
	if _, err := unix.InotifyAddWatch(fd, dir, dirEvents|unix.IN_ONLYDIR); err != nil {
		unix.Close(fd)
		return nil, err
	}
	// Non-blocking: os.File reads it through the runtime's poller, so Close ends a read.
	w := &dirWatch{f: os.NewFile(uintptr(fd), "inotify:"+dir), done: make(chan struct{})}
	go w.read(changed)
	return w, nil
}

func (w *dirWatch) read(changed chan<- struct{}) {
	defer close(w.done)
	buf := make([]byte, 16<<10)
	for {
		n, err := w.f.Read(buf)
		if err != nil {
			return // closed
		}
		select {
		case changed <- struct{}{}:
		default:
		}
		// The folder itself removed or moved: its watch is gone (IN_IGNORED follows).
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[off]))
			if ev.Mask&(unix.IN_IGNORED|unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0 {
				return
			}
			off += unix.SizeofInotifyEvent + int(ev.Len)
		}
	}
}

// alive says the watch still sees its folder.
func (w *dirWatch) alive() bool {
	select {
	case <-w.done:
		return false
	default:
		return true
	}
}

// close ends the watch and waits for its reader.
func (w *dirWatch) close() error {
	err := w.f.Close()
	<-w.done
	if errors.Is(err, os.ErrClosed) {
		return nil
	}
	return err
}
