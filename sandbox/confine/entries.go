package confine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/landlock-lsm/go-landlock/landlock"
	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Entries grants read-write each entry of Dir as it is when the agent starts, except
// those that are, or hold, a path of Keep, and symlinks: a /tmp that holds $HOME or
// orcr's home, which cannot be granted whole (a Landlock rule covers everything
// beneath it, and there is no rule that takes a folder out again). The policy names
// the folder and what is kept out, not the entries: they are read when the rules are
// made, by the launcher, or by the server's ruleset cache, which follows the folder
// from one spawn to the next instead of building every entry's rule again.
type Entries struct {
	Dir  string   `json:"dir"`
	Keep []string `json:"keep,omitempty"`
}

// MaxEntries bounds the entries of a folder granted one by one; beyond it none is.
const MaxEntries = 4096

// kept is the set of Dir's entry names that hold a path of Keep; all is true when
// Dir itself is one of them (nothing of it may be granted).
func (e *Entries) kept() (names map[string]bool, all bool) {
	names = map[string]bool{}
	dir := strings.TrimSuffix(e.Dir, "/")
	for _, k := range e.Keep {
		k = filepath.Clean(k)
		if k == dir {
			return names, true
		}
		if rest, ok := strings.CutPrefix(k, dir+"/"); ok {
			first, _, _ := strings.Cut(rest, "/")
			names[first] = true
		}
	}
	return names, false
}

// dirent is one entry of a folder as getdents gives it.
type dirent struct {
	name  string
	ino   uint64
	dtype uint8
}

var errTooMany = errors.New("too many entries")

// readEntries lists the folder open at fd (without "." and ".."), at most max.
func readEntries(fd, max int) ([]dirent, error) {
	var out []dirent
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return nil, err
		}
		if n <= 0 {
			return out, nil
		}
		for b := buf[:n]; len(b) >= 19; {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
			ino := binary.NativeEndian.Uint64(b[0:8])
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return nil, fmt.Errorf("getdents: a record of %d bytes", reclen)
			}
			typ := b[18]
			name := b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			b = b[reclen:]
			if s := string(name); s != "." && s != ".." {
				out = append(out, dirent{name: s, ino: ino, dtype: typ})
				if len(out) > max {
					return nil, errTooMany
				}
			}
		}
	}
}

// addEntries adds to the ruleset at rulesetFD a rule for each entry of e as it is now
// (the launcher's way): one listing, then per entry an openat relative to the folder,
// landlock_add_rule and close — the entry's type from the listing, no stat, no path
// walked from the root. It returns a warning when nothing of the folder is granted.
func addEntries(rulesetFD int, e *Entries, dirMask, fileMask uint64) (string, error) {
	kept, all := e.kept()
	if all {
		return fmt.Sprintf("%s: not granted (it is a home kept out)", e.Dir), nil
	}
	fd, err := syscall.Open(e.Dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Sprintf("%s: entries skipped (%v)", e.Dir, err), nil
	}
	defer syscall.Close(fd)
	ents, err := readEntries(fd, MaxEntries)
	if errors.Is(err, errTooMany) {
		return fmt.Sprintf("%s has over %d entries: none of them granted", e.Dir, MaxEntries), nil
	}
	if err != nil {
		return fmt.Sprintf("%s: entries skipped (%v)", e.Dir, err), nil
	}
	for _, d := range ents {
		if d.dtype == syscall.DT_LNK || kept[d.name] {
			continue
		}
		efd, err := unix.Openat(fd, d.name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // gone since the listing
		}
		isDir := d.dtype == syscall.DT_DIR
		if d.dtype == syscall.DT_UNKNOWN {
			var st unix.Stat_t
			if unix.Fstat(efd, &st) != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
				unix.Close(efd)
				continue
			}
			isDir = st.Mode&unix.S_IFMT == unix.S_IFDIR
		}
		mask := fileMask
		if isDir {
			mask = dirMask
		}
		attr := ll.PathBeneathAttr{ParentFd: efd, AllowedAccess: mask}
		err = ll.LandlockAddPathBeneathRule(rulesetFD, &attr, 0)
		unix.Close(efd)
		if err != nil {
			return "", fmt.Errorf("landlock_add_rule %s: %w", filepath.Join(e.Dir, d.name), err)
		}
	}
	return "", nil
}

// rwMasks are the access rights of a read-write folder and a read-write file at cfg,
// as landlock.RWDirs(…).WithRefer() and RWFiles give them.
func rwMasks(cfg landlock.Config, abi int) (dir, file uint64) {
	return rights(listRW, true, cfg, abi), rights(listRW, false, cfg, abi)
}

// tracked is one entry of a followed folder: an O_PATH descriptor of it (what its
// rules are added from, and what says later whether it was removed or moved), and
// the inode number its folder listed it with.
type tracked struct {
	fd    int
	ino   uint64
	isDir bool
}

// tracker follows one folder granted entry by entry (Entries.Dir) for the server's
// rulesets: one listing per spawn, a descriptor per entry. An entry gone from the
// folder (or made again under its name) was either removed — its inode is then
// unreachable, and a rule that still holds it grants nothing — or moved elsewhere,
// where a rule that holds it would grant it: the descriptor tells them apart (no link
// left), and a moved inode has every ruleset that holds it built again.
type tracker struct {
	dir string
	m   map[string]tracked
	// over says the folder had more than MaxEntries entries at the last listing.
	over bool
	// ifd watches the folder (inotify: an entry made, removed or moved in or out, the
	// folder itself removed or moved) since before the last listing, which is still
	// what the folder holds while the watch has no event and the path is still the
	// watched folder (wid): the listing is skipped then. ifd is 0 when there is none;
	// listed says the last listing succeeded. lists counts the listings (tests).
	// Only a tracker made with watched has a watch: a server's, long-lived. A
	// launcher's, which execs soon after, has none: the inotify descriptor closed at
	// the exec would hold the agent's start for the kernel's grace period
	// (synchronize_srcu: a close of one cost 15 ms here at load 30).
	watched bool
	ifd     int
	wid     fileID
	listed  bool
	lists   int
	// gen changes whenever m may have (a listing, a clear): a ruleset synced at this
	// gen holds a rule for every entry of m already (ruleset.synced).
	gen uint64
}

// watchEvents are what changes a folder's entries (or the folder).
const watchEvents = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// unchanged says the folder's entries are those of the last listing: it was made
// under a watch that has had no event since, and the path is still that folder.
// Events are consumed (the listing that follows a false covers them).
func (tr *tracker) unchanged() bool {
	if tr.ifd <= 0 || !tr.listed {
		return false
	}
	var st syscall.Stat_t
	if syscall.Stat(tr.dir, &st) != nil || (fileID{dev: st.Dev, ino: st.Ino}) != tr.wid {
		tr.unwatch()
		return false
	}
	var buf [4096]byte
	n, err := unix.Read(tr.ifd, buf[:])
	if n <= 0 && errors.Is(err, unix.EAGAIN) {
		return true
	}
	for n > 0 {
		n, err = unix.Read(tr.ifd, buf[:])
	}
	if !errors.Is(err, unix.EAGAIN) {
		tr.unwatch() // not drained: watched again by the listing
	}
	return false
}

// watch watches the folder open at fd, whose identity is id, from now on (the
// listing that follows is made under it); without inotify the folder is listed at
// every refresh.
func (tr *tracker) watch(fd int, id fileID) {
	if !tr.watched || (tr.ifd > 0 && tr.wid == id) {
		return
	}
	tr.unwatch()
	ifd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return
	}
	// The folder open at fd, not the path: the watch is on the inode listed.
	if _, err := unix.InotifyAddWatch(ifd, "/proc/self/fd/"+strconv.Itoa(fd), watchEvents); err != nil {
		unix.Close(ifd)
		return
	}
	tr.ifd, tr.wid = ifd, id
}

func (tr *tracker) unwatch() {
	if tr.ifd > 0 {
		unix.Close(tr.ifd)
	}
	tr.ifd, tr.listed = 0, false
}

// refresh lists the folder again — unless its watch says nothing changed since the
// last listing — and returns the inodes (as listed) of entries moved out of it since;
// err is the folder's own error (then nothing is granted of it).
func (tr *tracker) refresh() (moved []uint64, err error) {
	if tr.unchanged() {
		return nil, nil
	}
	tr.listed = false
	tr.gen++
	fd, err := syscall.Open(tr.dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		tr.unwatch()
		return tr.clear(), err
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) == nil {
		tr.watch(fd, fileID{dev: st.Dev, ino: st.Ino})
	} else {
		tr.unwatch()
	}
	tr.lists++
	ents, err := readEntries(fd, MaxEntries)
	if err != nil {
		tr.over = errors.Is(err, errTooMany)
		return tr.clear(), err
	}
	tr.over = false
	tr.listed = tr.ifd > 0
	if tr.m == nil {
		tr.m = map[string]tracked{}
	}
	seen := make(map[string]bool, len(ents))
	for _, d := range ents {
		if d.dtype == syscall.DT_LNK {
			continue
		}
		seen[d.name] = true
		old, ok := tr.m[d.name]
		if ok && old.ino == d.ino {
			continue
		}
		if ok {
			moved = append(moved, tr.drop(d.name, old)...)
		}
		efd, err := unix.Openat(fd, d.name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			continue // gone since the listing
		}
		var st unix.Stat_t
		if unix.Fstat(efd, &st) != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
			unix.Close(efd)
			continue
		}
		tr.m[d.name] = tracked{fd: efd, ino: d.ino, isDir: st.Mode&unix.S_IFMT == unix.S_IFDIR}
	}
	for name, old := range tr.m {
		if !seen[name] {
			moved = append(moved, tr.drop(name, old)...)
		}
	}
	return moved, nil
}

// drop forgets an entry and says whether its inode lives on elsewhere (moved).
func (tr *tracker) drop(name string, t tracked) []uint64 {
	delete(tr.m, name)
	var st unix.Stat_t
	err := unix.Fstat(t.fd, &st)
	unix.Close(t.fd)
	if err == nil && st.Nlink == 0 {
		return nil // removed
	}
	return []uint64{t.ino}
}

// clear forgets every entry (the folder cannot be read): all count as moved, so no
// ruleset keeps them.
func (tr *tracker) clear() []uint64 {
	var moved []uint64
	for name, t := range tr.m {
		moved = append(moved, tr.drop(name, t)...)
	}
	return moved
}

func (tr *tracker) close() {
	tr.unwatch()
	for name, t := range tr.m {
		unix.Close(t.fd)
		delete(tr.m, name)
	}
}

// sync adds to r a rule for each entry of tr it does not hold yet, but those kept
// out, and says how many it added.
func (r *ruleset) sync(tr *tracker) (added int, err error) {
	for name, t := range tr.m {
		if r.held[t.ino] || r.kept[name] {
			continue
		}
		mask := r.fileMask
		if t.isDir {
			mask = r.dirMask
		}
		attr := ll.PathBeneathAttr{ParentFd: t.fd, AllowedAccess: mask}
		if err := ll.LandlockAddPathBeneathRule(r.fd, &attr, 0); err != nil {
			return added, fmt.Errorf("landlock_add_rule %s: %w", filepath.Join(tr.dir, name), err)
		}
		r.held[t.ino] = true
		added++
	}
	return added, nil
}
