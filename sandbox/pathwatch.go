package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"sync"

	"orcr/sandbox/confine"

	"golang.org/x/sys/unix"
)

// pathWatch says when a kept policy's checks (built.holds: a stat of every path it
// was made from, ~35 on a pty agent's, on every launch) would answer as they did the
// last time they held, without making them: every folder in which those stats look a
// name up (lookupDirs: each component's folder, the folders a link leads through) is
// watched with inotify for an entry made, removed, moved in or out or changed in
// mode, and for the folder itself removed or moved; the mount table is watched too
// (/proc/self/mountinfo: a mount on a folder of the way changes what a name reaches,
// without an entry changing). While neither has said anything since the watches were
// set — before the stats that last held — every such stat would give what it gave:
// the same name in the same folder is the same entry, and an entry's inode does not
// change under it (the kept policy holds each resolution open: its number cannot be
// reused). Then a launch's check is two syscalls (a read of the inotify descriptor,
// a poll of the mount table's) instead of ~35 stats — ~3 % of a confined spawn on
// this two-CPU VM (`BenchmarkSandboxedSpawn`, the checks left out altogether: pty
// 1.085 → 1.059, pty/own-folder 1.101 → 1.064, five and four interleaved runs).
//
// Anything said, or a queue overflowed, and the next check makes the stats (the
// watches set again first). A folder on a file system whose changes may not reach
// inotify — another machine's (NFS, SMB, FUSE), or one whose entries the kernel
// makes as they are read (proc, sysfs) — leaves the watch off: every check stats, as
// before.
type pathWatch struct {
	mu   sync.Mutex
	dirs []string
	// ifd and mfd are the inotify and mount-table descriptors of the watches set last
	// (0: none); gen counts the settings, quiet is true once the stats made after
	// the setting gen held (hold).
	ifd, mfd int
	gen      uint64
	quiet    bool
	// seen is what the stats that held found (built.holds' answer while quiet).
	seen map[string]confine.FileID
	// off says the watch can never say anything for sure (a folder it cannot watch).
	off bool
}

// watchMask is what a folder of the way is watched for: its entries made, removed,
// moved in or out or changed in mode or owner (IN_ATTRIB: lookPath's exec bit, a
// folder made unsearchable), and itself removed or moved. Writes to files are not
// (a stat's inode and existence do not change with them).
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ATTRIB |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR | unix.IN_DONT_FOLLOW

// localFS are the file systems whose every change of an entry reaches inotify (a
// folder's statfs type): ext2-4, tmpfs (and devtmpfs), xfs, btrfs, f2fs, zfs,
// overlayfs (its upper layer; its lower ones do not change under a mount), devpts.
var localFS = map[int64]bool{0xEF53: true, 0x01021994: true, 0x58465342: true, 0x9123683E: true,
	0xF2F52010: true, 0x2FC12FC1: true, 0x794C7630: true, 0x1CD1: true}

// newPathWatch is the watch of the folders in which paths are looked up.
func newPathWatch(paths []string) *pathWatch {
	set := map[string]bool{}
	var dirs []string
	for _, p := range paths {
		for _, d := range lookupDirs(p) {
			if !set[d] {
				set[d] = true
				dirs = append(dirs, d)
			}
		}
	}
	return &pathWatch{dirs: dirs}
}

// still says nothing changed since the stats that last held, and what they found:
// the checks would answer as they did.
func (w *pathWatch) still() (map[string]confine.FileID, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.quiet {
		return nil, false
	}
	var buf [512]byte
	n, err := unix.Read(w.ifd, buf[:])
	changed := n > 0 || err != unix.EAGAIN
	if !changed {
		fds := []unix.PollFd{{Fd: int32(w.mfd), Events: unix.POLLPRI}}
		n, err := unix.Poll(fds, 0)
		changed = err != nil || (n > 0 && fds[0].Revents&(unix.POLLPRI|unix.POLLERR) != 0)
	}
	if changed {
		w.quiet = false
		return nil, false
	}
	return w.seen, true
}

// set sets the watches again, before stats whose holding hold then says; it
// returns the setting's number (0: none set — the watch is off).
func (w *pathWatch) set() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closeFDs()
	if w.off {
		return 0
	}
	ifd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return 0
	}
	// Opened before the watches: a mount from now on is a change.
	mfd, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Close(ifd)
		return 0
	}
	w.ifd, w.mfd = ifd, mfd
	for _, d := range w.dirs {
		var st unix.Statfs_t
		if err := unix.Statfs(d, &st); err != nil || !localFS[int64(st.Type)] {
			w.off = true
		} else if _, err := unix.InotifyAddWatch(ifd, d, watchMask); err != nil {
			w.off = true
		}
		if w.off {
			w.closeFDs()
			return 0
		}
	}
	w.gen++
	return w.gen
}

// hold says the stats made after setting gen held, and found seen: the watch is
// quiet from then on, until it hears of a change.
func (w *pathWatch) hold(gen uint64, seen map[string]confine.FileID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if gen != 0 && gen == w.gen && w.ifd > 0 && !w.off {
		w.quiet, w.seen = true, seen
	}
}

// isQuiet says the watch stands for the stats now (tests).
func (w *pathWatch) isQuiet() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.quiet
}

// close lets the descriptors go.
func (w *pathWatch) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closeFDs()
	w.off = true
}

// closeFDs closes the descriptors; w.mu is held.
func (w *pathWatch) closeFDs() {
	if w.ifd > 0 {
		unix.Close(w.ifd)
	}
	if w.mfd > 0 {
		unix.Close(w.mfd)
	}
	w.ifd, w.mfd, w.quiet, w.seen = 0, 0, false, nil
}

// maxLinks bounds the links followed resolving one path (the kernel's is 40).
const maxLinks = 40

// lookupDirs are the folders in which resolving path (absolute, links followed)
// looks a name up, in order: the folder of each component, and through each link the
// folders its target's components are in — up to the first name missing, which is
// looked up too (a file made there changes the answer). A relative path has none.
func lookupDirs(path string) []string {
	if !filepath.IsAbs(path) {
		return nil
	}
	var dirs []string
	seen := map[string]bool{}
	cur := "/"
	comps := strings.Split(path, "/")
	for links := 0; len(comps) > 0; {
		c := comps[0]
		comps = comps[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = filepath.Dir(cur)
			continue
		}
		if !seen[cur] {
			seen[cur] = true
			dirs = append(dirs, cur)
		}
		next := filepath.Join(cur, c)
		st, err := os.Lstat(next)
		if err != nil {
			return dirs
		}
		if st.Mode()&os.ModeSymlink != 0 {
			links++
			target, err := os.Readlink(next)
			if err != nil || links > maxLinks {
				return dirs
			}
			if filepath.IsAbs(target) {
				cur = "/"
			}
			comps = append(strings.Split(target, "/"), comps...)
			continue
		}
		if !st.IsDir() && len(comps) > 0 {
			return dirs
		}
		cur = next
	}
	return dirs
}
