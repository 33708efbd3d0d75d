package confine

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	ll "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"
)

// Rulesets keeps the Landlock rulesets a server built to confine agents from its own
// threads (the pty host's in-process path), one per distinct policy, so agents
// launched again and again with the same policy (a run's coders respawned in their
// worktree, a fleet in one folder) do not reopen and re-add every path at each
// launch. A ruleset is a kernel object that landlock_restrict_self copies into the
// new domain, so one can restrict any number of threads.
//
// A rule holds the inode its path was opened on, not the name: a folder removed and
// made again at the same path is a new inode the old rule does not grant. So before a
// cached ruleset is used again every path it was built from is stat'ed once (one
// syscall each, where building takes a stat, an open, a landlock_add_rule and a
// close), and any that is another inode now — or exists now where it was missing, or
// is gone — has the ruleset built again. The zero value is ready to use.
type Rulesets struct {
	mu   sync.Mutex
	m    map[string]*ruleset
	tick uint64
	// trackers follow the folders granted entry by entry (Policy.Entries), by path.
	trackers map[string]*tracker
	// ready is a thread started ahead, not confined, that the next new confined
	// thread will be (thread); readying says one is being started; closed that
	// Close ran (no thread is started after it). They have a lock of their own,
	// held only to read or set them: the goroutine that starts the thread once
	// waited for mu instead, which Ready holds through each confinement — behind
	// launches one after another it got it 4–15 ms late, and four launches in five
	// made their thread on their own path.
	readyMu  sync.Mutex
	ready    *worker
	readying bool
	closed   bool
	// watch says the folders granted entry by entry are watched (inotify) rather than
	// listed at every spawn: set by Ready (a server's cache), not by Prepare (a
	// launcher's, which execs soon).
	watch bool
	// later is the work made ahead for the next new policy (a thread, a spare
	// ruleset) that waits for the spawn which asked for it to start its agent
	// (after, kick); its lock is its own.
	laterMu sync.Mutex
	later   []func()
	// spares are rulesets of the policy agents in folders of their own share,
	// built ahead (fresh).
	spares spares
	// Hits and Builds count what Ready did with rulesets, Threads the confined
	// threads it started, Syncs the rulesets brought up to a folder's new listing,
	// SpareHits the builds a spare spared (tests, benchmarks).
	Hits, Builds, Threads, Syncs, SpareHits int
}

// thread is the thread the next confined thread will be: the one started ahead when
// there is one — it is taken, so no thread is handed out twice — or a new one; the
// next is started off the spawn's path, once its agent is forked (after). c.mu is
// held.
//
// Making a thread (clone, the Go runtime's M, its first scheduling) was 0.3–1.4 ms of
// a spawn whose policy was new (an agent in a folder of its own); the one kept ahead
// costs a parked thread (no CPU; its kernel task and Go's 16 KiB system stack), made
// only once the server confined a first agent, ended by Close.
func (c *Rulesets) thread() (*worker, error) {
	c.readyMu.Lock()
	defer c.readyMu.Unlock()
	w := c.ready
	c.ready = nil
	if !c.readying && !c.closed {
		c.readying = true
		c.after(func() {
			nw, err := newThread()
			c.readyMu.Lock()
			defer c.readyMu.Unlock()
			c.readying = false
			if err != nil {
				return
			}
			if c.closed || c.ready != nil {
				nw.end()
				return
			}
			c.ready = nw
		})
	}
	if w != nil {
		return w, nil
	}
	return newThread()
}

// after runs fn, work made ahead for the next new policy's spawn, once the spawn
// that asked for it has started its agent (kick).
func (c *Rulesets) after(fn func()) {
	c.laterMu.Lock()
	defer c.laterMu.Unlock()
	c.later = append(c.later, fn)
}

// kick runs the work made ahead that waits (after), one piece after the other on a
// goroutine of its own.
func (c *Rulesets) kick() {
	c.laterMu.Lock()
	fns := c.later
	c.later = nil
	c.laterMu.Unlock()
	if len(fns) == 0 {
		return
	}
	go func() {
		for _, fn := range fns {
			fn()
		}
	}()
}

// maxRulesets bounds the cache: the least recently used ruleset is closed beyond it.
const maxRulesets = 32

type ruleset struct {
	fd    int
	flags uint32
	rep   Report
	ids   []pathID
	used  uint64
	// For a policy with Entries: the inodes (as the folder lists them) it holds a rule
	// for, the entry names kept out, and the rights of an entry's rule.
	held              map[uint64]bool
	kept              map[string]bool
	dirMask, fileMask uint64
	// synced is the tracker's gen it last added the rules of (0: never): while the
	// tracker has not listed its folder again, there is nothing to add.
	synced uint64
	// w is the thread confined with this ruleset as it is now; nil when there is
	// none, or it was stopped because rules were added since.
	w *worker
}

// holdsAny says r holds a rule for one of inos.
func (r *ruleset) holdsAny(inos []uint64) bool {
	for _, i := range inos {
		if r.held[i] {
			return true
		}
	}
	return false
}

// valid says every path of r is what it was when r was built: a stat each, but for
// the paths in seen (what this launch's policy build stat'ed a moment ago:
// Policy.Seen), which are taken as they were seen. Paths
// that share a parent folder with very many others (a policy that names a folder's
// entries one by one) are checked with one read of that folder — each entry's inode
// is in it — instead of a stat each.
//
// A folder is read only for minDirRead paths of it: a server's policy has the nine
// devices of /dev, and listing /dev (107 entries here, two of the nine mountpoints
// stat'ed anyway) made valid 2–3× slower than nine stats (BenchmarkRulesetValid:
// 31–61 µs against 14–23 µs at load 7).
func (r *ruleset) valid(seen map[string]FileID) bool {
	if len(r.ids) < minDirRead {
		for _, p := range r.ids {
			if same, known := p.seenAs(seen); known {
				if !same {
					return false
				}
			} else if !p.now() {
				return false
			}
		}
		return true
	}
	byDir := map[string][]pathID{}
	for _, p := range r.ids {
		if same, known := p.seenAs(seen); known {
			if !same {
				return false
			}
			continue
		}
		byDir[filepath.Dir(p.path)] = append(byDir[filepath.Dir(p.path)], p)
	}
	for dir, ps := range byDir {
		if len(ps) >= minDirRead && dir != "/" {
			rest, ok := validInDir(dir, ps)
			if !ok {
				return false
			}
			ps = rest
		}
		for _, p := range ps {
			if !p.now() {
				return false
			}
		}
	}
	return true
}

// seenAs says whether seen (Policy.Seen) knows p — a path that existed when the
// ruleset was built and this launch's policy build stat'ed — and if so whether it
// is still p's inode.
func (p pathID) seenAs(seen map[string]FileID) (same, known bool) {
	if p.id == (fileID{}) {
		return false, false
	}
	id, ok := seen[p.path]
	return id == p.id, ok
}

// minDirRead is how many paths of one folder make reading the folder cheaper than a
// stat each: a listing costs with the folder's entries (a getdents record each), not
// with the paths checked.
const minDirRead = 64

// dirReads counts the folders valid read (tests).
var dirReads atomic.Int64

// now says p is still what it was.
func (p pathID) now() bool {
	id, _ := StatID(p.path)
	return id == p.id
}

// validInDir checks paths of dir from one read of it: an entry whose inode number
// and device (the folder's) are the ones recorded is unchanged. It returns the paths
// the read cannot vouch for — a mountpoint's entry shows the folder under it, not the
// mounted root the rule holds; a folder that cannot be read — for a stat each, and
// ok false when one is surely changed (recorded missing and there now, or recorded
// and gone). The numbers are safe to compare: a Landlock rule holds its inode, so
// while the ruleset lives no new file on that device can get its number.
func validInDir(dir string, ps []pathID) (rest []pathID, ok bool) {
	dirReads.Add(1)
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return ps, true
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return ps, true
	}
	want := make(map[string]pathID, len(ps))
	for _, p := range ps {
		want[filepath.Base(p.path)] = p
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := unix.Getdents(fd, buf)
		if err != nil {
			return ps, true
		}
		if n <= 0 {
			break
		}
		for b := buf[:n]; len(b) >= 19; {
			// struct linux_dirent64: ino u64, off s64, reclen u16, type u8, name.
			ino := binary.NativeEndian.Uint64(b[0:8])
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return ps, true
			}
			name := b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			b = b[reclen:]
			p, found := want[string(name)]
			if !found {
				continue
			}
			delete(want, string(name))
			switch {
			case p.id == fileID{}:
				return nil, false // made since
			case p.id != (fileID{dev: st.Dev, ino: ino}):
				rest = append(rest, p)
			}
		}
	}
	for _, p := range want {
		if p.id != (fileID{}) {
			return nil, false // gone since
		}
	}
	return rest, true
}

// Ready readies an OS thread of this process confined to p (p.ProcSelf ignored),
// from which the Pending's Run has the agent forked: the child inherits the thread's
// domain. It is done apart from the start so that a caller can have it done beside
// its own work (the sandbox's in-process launch, while the pty host opens the agent's
// terminal). The thread is kept for p (worker): an agent of a policy equal to an
// earlier one is started from the thread that started that one, while the ruleset it
// was confined with still holds — every path it was built from is the same inode, and
// no entry of a folder granted entry by entry (Entries) is new or moved out; else the
// ruleset is brought up to date or built again and a new thread is confined with it.
// flags are landlock_restrict_self's (audit logging, ABI ≥ 7; dropped below). The
// rest of the process is never confined.
func (c *Rulesets) Ready(p Policy, flags uint32) *Pending {
	pd := &Pending{c: c, p: p, flags: flags}
	pd.w, pd.rep, pd.err = c.confined(p, flags)
	return pd
}

// Pending is a confinement made ready (Ready), for one start.
type Pending struct {
	c     *Rulesets
	p     Policy
	flags uint32
	w     *worker
	rep   Report
	err   error
}

// Run calls start on the thread made ready; start gets what was applied (its
// warnings are the pane's notice) and forks the agent. When that thread was stopped
// in between (its ruleset brought up to date or dropped by another launch,
// or more than maxWorkers policies launched since), the confinement is made again,
// as the policy and its paths are now.
func (pd *Pending) Run(start func(Report) error) (Report, error) {
	for {
		if pd.err != nil {
			return pd.rep, pd.err
		}
		ran, err := pd.w.do(func() error { return start(pd.rep) })
		if ran {
			// The agent is forked: what its confinement took for the next new policy
			// (a thread, a spare ruleset) is made again now, beside its start's rest,
			// not beside the fork.
			pd.c.kick()
			return pd.rep, err
		}
		pd.w, pd.rep, pd.err = pd.c.confined(pd.p, pd.flags)
	}
}

// confined is a thread confined to p as its paths are now, with what was applied:
// the thread kept for p's ruleset, or one made ahead (thread) confined to it now.
func (c *Rulesets) confined(p Policy, flags uint32) (*worker, Report, error) {
	p.ProcSelf = false
	c.mu.Lock()
	defer c.mu.Unlock()
	c.readyMu.Lock()
	closed := c.closed
	c.readyMu.Unlock()
	if closed {
		// A launch made ready after its server's Close: no thread is confined (it
		// would outlive the cache that stops them).
		return nil, Report{}, errors.New("landlock: the server is closing")
	}
	c.watch = true
	r, rep, flags, err := c.get(p, flags)
	if err != nil {
		return nil, rep, err
	}
	if r.w != nil && (r.w.flags != flags || r.w.ended()) {
		// Another audit setting; or the thread ended (its restriction failed at its
		// first start, which that start's launch was told).
		r.w.end()
		r.w = nil
	}
	if r.w != nil {
		c.touch(r.w)
		return r.w, rep, nil
	}
	c.bound()
	w, err := c.thread()
	if err != nil {
		return nil, rep, fmt.Errorf("landlock (ABI %d): %w", rep.ABI, err)
	}
	c.touch(w)
	if err := w.confine(r.fd, flags); err != nil {
		w.end()
		return nil, rep, fmt.Errorf("landlock (ABI %d): %w", rep.ABI, err)
	}
	r.w = w
	c.Threads++
	return w, rep, nil
}

// touch marks w used now: its idle end is pushed back. c.mu is held.
func (c *Rulesets) touch(w *worker) {
	w.last = time.Now()
	if w.idle == nil {
		w.idle = time.AfterFunc(workerIdle, func() { c.reap(w) })
	} else {
		w.idle.Reset(workerIdle)
	}
}

// get is the ruleset of p as the folders and paths are now — the one kept, checked
// and brought up to date, or a new one — with what applying it reports and
// landlock_restrict_self's flags for it. c.mu is held.
func (c *Rulesets) get(p Policy, flags uint32) (*ruleset, Report, uint32, error) {
	key := rulesetKey(p)
	c.tick++
	// A folder granted entry by entry is listed once: entries new since a ruleset was
	// built get a rule added to it; one moved out of the folder has every ruleset that
	// holds it built again (a removed one is harmless: its inode is unreachable).
	var tr *tracker
	var trErr error
	var kept map[string]bool
	if p.Entries != nil {
		var all bool
		kept, all = p.Entries.kept()
		if !all {
			tr = c.tracker(p.Entries.Dir)
			var moved []uint64
			moved, trErr = tr.refresh()
			if len(moved) > 0 {
				for k, r := range c.m {
					if r.holdsAny(moved) {
						c.drop(k)
					}
				}
			}
		}
	}
	r := c.m[key]
	seen := p.seen()
	if r != nil && (!r.valid(seen) || (tr != nil && len(r.held) > 2*len(tr.m)+256)) {
		// A path changed; or most rules are of entries removed since (they grant
		// nothing, but the ruleset only grows).
		c.drop(key)
		r = nil
	}
	if r == nil {
		var err error
		if r, err = c.fresh(p, seen); err != nil {
			return nil, r.rep, 0, err
		}
		if c.m == nil {
			c.m = map[string]*ruleset{}
		}
		if len(c.m) >= maxRulesets {
			c.evict()
		}
		if p.Entries != nil {
			r.held, r.kept = map[uint64]bool{}, kept
		}
		c.m[key] = r
		c.Builds++
	} else {
		c.Hits++
	}
	if tr != nil && trErr == nil && r.synced != tr.gen {
		c.Syncs++
		added, err := r.sync(tr)
		if err != nil {
			c.drop(key)
			return nil, r.rep, 0, err
		}
		if added > 0 && r.w != nil {
			// The thread's domain is a copy of the ruleset as it was: a new one gets
			// the entries made since.
			r.w.end()
			r.w = nil
		}
		r.synced = tr.gen
	}
	r.used = c.tick
	rep := r.rep
	rep.Warnings = slices.Clone(rep.Warnings)
	switch {
	case p.Entries == nil:
	case tr == nil:
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: not granted (it is a home kept out)", p.Entries.Dir))
	case tr.over:
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s has over %d entries: none of them granted", p.Entries.Dir, MaxEntries))
	case trErr != nil:
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s: entries skipped (%v)", p.Entries.Dir, trErr))
	}
	if rep.ABI < 7 {
		flags = 0
	}
	flags |= r.flags
	return r, rep, flags, nil
}

// newRuleset builds the ruleset of p's paths and ports (p.Entries aside: sync adds
// them). On an error the ruleset returned holds only what applying it would have
// reported.
func newRuleset(p Policy) (*ruleset, error) {
	p.Entries = nil
	pl, ids, err := build(p)
	if err != nil {
		return &ruleset{}, err
	}
	fd, fl, err := pl.Config.NewRulesetFD(pl.Rules...)
	if err != nil {
		return &ruleset{rep: pl.Report}, fmt.Errorf("landlock (ABI %d): %w", pl.Report.ABI, err)
	}
	if fd < 0 {
		return &ruleset{rep: pl.Report}, fmt.Errorf("landlock (ABI %d): nothing to restrict", pl.Report.ABI)
	}
	r := &ruleset{fd: fd, flags: fl, rep: pl.Report, ids: ids}
	r.dirMask, r.fileMask = rwMasks(pl.Config, pl.Report.ABI)
	return r, nil
}

// fresh is a new ruleset of p. When p names paths of its agent's own (Own: a folder
// of its own, as a run's coders have their worktrees), every such agent's policy is
// a new one, and building its ruleset — a stat, an open, a landlock_add_rule and a
// close per path, ~25 paths — was 125–235 µs of its spawn. So the rest of the
// policy, the same for all of them, is kept built ahead (a spare), checked as a kept
// ruleset is (valid), and the agent's own paths are added to it: a stat each and two
// rules. The next spare is built off the spawn's path. c.mu is held.
func (c *Rulesets) fresh(p Policy, seen map[string]FileID) (*ruleset, error) {
	p.Entries = nil
	if len(p.Own) == 0 || !c.watch {
		// A launcher's Prepare, or nothing of the agent's own: no spare.
		return newRuleset(p)
	}
	shared := p
	shared.RW = slices.DeleteFunc(slices.Clone(p.RW), func(s string) bool { return slices.Contains(p.Own, s) })
	shared.Own = nil
	sk := rulesetKey(shared)
	s := c.spares.take(sk)
	c.spares.prepare(sk, shared, c.after)
	if s != nil && s.valid(seen) {
		if err := s.addOwn(p.Own); err == nil {
			c.SpareHits++
			return s, nil
		}
	}
	if s != nil {
		// Built from paths that changed since: the paths held for it are dropped too.
		syscall.Close(s.fd)
		c.spares.forget(sk)
	}
	return newRuleset(p)
}

// addOwn adds a read-write rule for each path (a folder's or a file's rights, as
// build gives RW), recording what each was; a path that does not exist is skipped
// with a warning, as build skips it.
func (r *ruleset) addOwn(paths []string) error {
	for _, path := range paths {
		fd, err := syscall.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			r.ids = append(r.ids, pathID{path: path})
			r.rep.Warnings = append(r.rep.Warnings, fmt.Sprintf("%s: skipped (%v)", path, err))
			continue
		}
		var st syscall.Stat_t
		if err := syscall.Fstat(fd, &st); err != nil {
			syscall.Close(fd)
			return fmt.Errorf("fstat %s: %w", path, err)
		}
		mask := r.fileMask
		if st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
			mask = r.dirMask
		}
		attr := ll.PathBeneathAttr{ParentFd: fd, AllowedAccess: mask}
		err = ll.LandlockAddPathBeneathRule(r.fd, &attr, 0)
		syscall.Close(fd)
		if err != nil {
			return fmt.Errorf("landlock_add_rule %s: %w", path, err)
		}
		r.ids = append(r.ids, pathID{path: path, id: fileID{dev: st.Dev, ino: st.Ino}})
	}
	return nil
}

// spares are rulesets built ahead, by the key of the policy they were built from, for
// Rulesets.fresh; taken whole (an agent's paths are added to the one taken, so it is
// never handed out twice). Their lock is theirs alone: the goroutine that builds one
// would wait behind Ready's long hold of Rulesets.mu otherwise.
type spares struct {
	mu     sync.Mutex
	m      map[string]*ruleset
	making map[string]bool
	// held are the policies spares are made from, their paths opened once.
	held   map[string]*heldPolicy
	closed bool
}

// maxSpares bounds the spares kept: a server's confined agents have a few shared
// policies (one per provider and account).
const maxSpares = 4

// take is the spare of key, no longer kept; nil when there is none.
func (s *spares) take(key string) *ruleset {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.m[key]
	delete(s.m, key)
	return r
}

// prepare builds a spare of p (its key) through after (Rulesets.after: once the spawn
// that took the last one has started its agent), unless one is kept or being built.
func (s *spares) prepare(key string, p Policy, after func(func())) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed || s.m[key] != nil || s.making[key] {
		return
	}
	if s.making == nil {
		s.making = map[string]bool{}
	}
	s.making[key] = true
	after(func() {
		r, err := s.build(key, p)
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.making, key)
		if err != nil {
			return
		}
		if s.closed || len(s.m) >= maxSpares {
			syscall.Close(r.fd)
			return
		}
		if s.m == nil {
			s.m = map[string]*ruleset{}
		}
		s.m[key] = r
	})
}

// build is a new spare of p (its key): made from p's paths held (heldPolicy), opened
// at the first spare of key; from the paths themselves when they cannot be held.
func (s *spares) build(key string, p Policy) (*ruleset, error) {
	s.mu.Lock()
	h := s.held[key]
	s.mu.Unlock()
	if h == nil {
		nh, err := holdPolicy(p)
		if err != nil {
			return newRuleset(p)
		}
		s.mu.Lock()
		if s.closed || s.held[key] != nil || len(s.held) >= maxSpares {
			s.mu.Unlock()
			nh.close()
			return newRuleset(p)
		}
		if s.held == nil {
			s.held = map[string]*heldPolicy{}
		}
		s.held[key] = nh
		nh.idle = time.AfterFunc(heldIdle, func() { s.forgetHeld(key, nh) })
		s.mu.Unlock()
		h = nh
	}
	r, err := h.ruleset()
	if err != nil {
		return newRuleset(p)
	}
	return r, nil
}

// forget closes the paths held for key's spares (they changed since).
func (s *spares) forget(key string) {
	s.mu.Lock()
	h := s.held[key]
	delete(s.held, key)
	s.mu.Unlock()
	if h != nil {
		h.close()
	}
}

// forgetHeld closes h, held for key, unused for heldIdle.
func (s *spares) forgetHeld(key string, h *heldPolicy) {
	s.mu.Lock()
	if s.held[key] == h {
		delete(s.held, key)
	}
	s.mu.Unlock()
	h.close()
}

// close closes every spare kept, and the paths held; none is kept after it.
func (s *spares) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for k, r := range s.m {
		syscall.Close(r.fd)
		delete(s.m, k)
	}
	for k, h := range s.held {
		h.close()
		delete(s.held, k)
	}
}

// bound stops the least recently used confined thread when maxWorkers run; c.mu is
// held.
func (c *Rulesets) bound() {
	var old *ruleset
	n := 0
	for _, r := range c.m {
		if r.w == nil {
			continue
		}
		n++
		if old == nil || r.w.last.Before(old.w.last) {
			old = r
		}
	}
	if n >= maxWorkers {
		old.w.end()
		old.w = nil
	}
}

// reap stops w when it has been idle for workerIdle.
func (c *Rulesets) reap(w *worker) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(w.last) < workerIdle {
		return
	}
	for _, r := range c.m {
		if r.w == w {
			w.end()
			r.w = nil
		}
	}
}

// drop closes the ruleset of key and stops its thread; c.mu is held.
func (c *Rulesets) drop(key string) {
	r := c.m[key]
	if r == nil {
		return
	}
	if r.w != nil {
		r.w.end()
		r.w = nil
	}
	syscall.Close(r.fd)
	delete(c.m, key)
}

// Live is the number of confined threads kept (tests).
func (c *Rulesets) Live() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, r := range c.m {
		if r.w != nil {
			n++
		}
	}
	return n
}

// Ahead is the number of threads made ahead for the next new policy (0 or 1): not
// confined yet, but already without privileges (tests).
func (c *Rulesets) Ahead() int {
	c.readyMu.Lock()
	defer c.readyMu.Unlock()
	if c.ready != nil {
		return 1
	}
	return 0
}

// Len is the number of rulesets kept.
func (c *Rulesets) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// tracker is the tracker of dir; c.mu is held.
func (c *Rulesets) tracker(dir string) *tracker {
	if tr := c.trackers[dir]; tr != nil {
		return tr
	}
	if c.trackers == nil {
		c.trackers = map[string]*tracker{}
	}
	tr := &tracker{dir: dir, watched: c.watch}
	c.trackers[dir] = tr
	return tr
}

// Close closes every ruleset kept, and the folders followed.
func (c *Rulesets) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.spares.close()
	c.readyMu.Lock()
	c.closed = true
	if c.ready != nil {
		c.ready.end()
		c.ready = nil
	}
	c.readyMu.Unlock()
	for k, tr := range c.trackers {
		tr.close()
		delete(c.trackers, k)
	}
	for k := range c.m {
		c.drop(k)
	}
}

// evict closes the least recently used ruleset; c.mu is held.
func (c *Rulesets) evict() {
	var old string
	var at uint64
	for k, r := range c.m {
		if old == "" || r.used < at {
			old, at = k, r.used
		}
	}
	c.drop(old)
}

// seenFor is how long after its policy was made a launch's Seen paths stand for a
// stat: the policy is made and applied in one launch, within a millisecond or so.
const seenFor = time.Second

// seen is p.Seen while it is recent (seenFor); nil otherwise.
func (p Policy) seen() map[string]FileID {
	if len(p.Seen) == 0 || time.Since(p.SeenAt) > seenFor {
		return nil
	}
	return p.Seen
}

// rulesetKey is what of p makes its rules: the same key is the same ruleset.
func rulesetKey(p Policy) string {
	var b strings.Builder
	for _, list := range [][]string{p.RW, p.ROX, p.RO, p.Dev} {
		for _, s := range list {
			b.WriteString(s)
			b.WriteByte(0)
		}
		b.WriteByte(1)
	}
	for _, port := range p.Ports {
		b.WriteString(strconv.Itoa(port))
		b.WriteByte(0)
	}
	b.WriteByte(1)
	b.WriteString(p.Socket)
	b.WriteByte(1)
	b.WriteString(strconv.Itoa(p.MaxABI))
	if p.ProcSelf {
		b.WriteString("\x01proc")
	}
	if p.Entries != nil {
		b.WriteByte(1)
		b.WriteString(p.Entries.Dir)
		for _, k := range p.Entries.Keep {
			b.WriteByte(0)
			b.WriteString(k)
		}
	}
	return b.String()
}

// Prepare builds the ruleset of p ahead of the launch that will apply it (a spare
// launcher, before its launch comes: Await), keeping the folder p grants entry by
// entry followed. It says whether one was built.
func (c *Rulesets) Prepare(p Policy) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, _, _, err := c.get(p, 0)
	return err == nil
}

// prepared says c holds a ruleset of p's key (Prepare).
func (c *Rulesets) prepared(p Policy) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[rulesetKey(p)] != nil
}

// restrictHere confines the calling thread (locked to its goroutine, and about to
// exec: the launcher's) with p's ruleset as the folders and paths are now: the one
// Prepare built, checked and brought up to date as Ready does — a path that is another
// inode now, or an entry moved out of the folder, has it built again; an entry made
// since gets its rule — so it grants what a ruleset built now would, no more.
func (c *Rulesets) restrictHere(p Policy, flags uint32) (Report, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, rep, flags, err := c.get(p, flags)
	if err != nil {
		return rep, err
	}
	if err := restrictSelf(r.fd, flags); err != nil {
		return rep, fmt.Errorf("landlock (ABI %d): %w", rep.ABI, err)
	}
	return rep, nil
}
