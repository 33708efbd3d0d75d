package sandbox

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"orcr/core"
	"orcr/core/wire"
	"orcr/sandbox/confine"

	"golang.org/x/sys/unix"
)

// A launch's policy is made from its inputs (the agent's folder, program, HOME,
// TMPDIR, PATH, what the adapter and the agent's sandbox ask for) and from the file
// system: each grant's links resolved, which of the toolchain's and /etc's folders
// and git's settings exist, the repository's git dir, the program found on PATH.
// Agents launched again and again with the same inputs (a fleet in one folder, a
// run's coders respawned in their worktree) got the same policy, made again each
// time: ~60–80 µs of a spawn (lstats of every component of every grant, the notes'
// strings), 130–160 µs at load 10.
//
// So the policy is kept per inputs (buildKey) with what of the file system it was
// made from (witness), and used again only while that is all still so (holds) —
// all of it but the agent's own part (its folder and the repository's git dir),
// which every launch makes afresh (ownGrants: a few lstats), so agents in folders
// of their own share the rest:
//   - each path resolved (realPaths): the path and its resolution are still the
//     inode the build saw (a stat each; one when the path had no link), or the path
//     is still missing. The kept policy holds an O_PATH descriptor of each such
//     inode, so its number cannot be given to a new file while it is kept (a folder
//     removed and made again at once got its number back here: ext4 reuses them). A link re-pointed elsewhere, a folder removed, replaced or
//     made since: another inode or none, so the policy is made again. What is
//     granted is an inode (a Landlock rule holds the inode it was opened on): the
//     one kept is the inode a fresh build's resolution reaches now, at a name that
//     passed every check ($HOME, its credentials, orcr's home) when it was made;
//   - each folder or file whose existence decided a grant: still there, or still not;
//   - the program on PATH: found again (lookPath: a stat per PATH folder), the same.
//
// Anything else that differs is another key. A build that failed (a refused grant)
// is not kept: the next launch builds, and refuses, again. Once a check held, a
// watch of every folder those stats look in (pathWatch) answers for them while it
// hears nothing.
type builds struct {
	mu     sync.Mutex
	m      map[string]*built
	closed bool
	// hits and misses count (tests); watched the hits a quiet watch answered for.
	hits, misses int
	watched      atomic.Int64
}

// maxBuilds bounds the policies kept (and the descriptors they hold, ~10 each):
// beyond it the cache starts over.
const maxBuilds = 16

// built is a policy kept, and what it was made from.
type built struct {
	p confine.Policy
	w witness
	// resolved are w.real's paths, each as it was just after the build.
	resolved []resolvedAs
	// seen are resolved's paths and their resolutions that exist, by their inode, as
	// record found them (confine.Policy.Seen of the launch that made b). Not changed
	// after record.
	seen map[string]confine.FileID
	// dead is set before the descriptors are closed: a check that read it unset
	// after its stats made them while the inodes were held.
	dead atomic.Bool
	// watch stands for holds' stats while nothing they look at changed (pathWatch);
	// set off the spawn's path after the first check that held (arm), arming says
	// that is under way.
	watch  atomic.Pointer[pathWatch]
	arming atomic.Bool
}

// witness records what of the file system a build read.
type witness struct {
	real   realPaths
	exists []existed
	// bin is the program lookPath found.
	bin string
}

type existed struct {
	path  string
	there bool
}

// resolvedAs is a path the build resolved (x → r), and the inode both were just
// after; there false when x did not exist.
type resolvedAs struct {
	x, r  string
	id    confine.FileID
	there bool
	fd    int // holds the inode (when there)
}

// build is buildFresh's policy: the agent's own paths made now, the rest kept for
// the same inputs while what it was made from holds (builds). A run's coders, each
// in a worktree of its own, share the rest: keeping only whole policies, every
// coder's was made and recorded afresh (~120 µs of its spawn, for a policy never
// used again).
func (f *Feature) build(a wire.Agent, spec *core.LaunchSpec, needs core.Confinement, sharedTmp string, proc bool) (confine.Policy, error) {
	p, _, err := f.buildSeen(a, spec, needs, sharedTmp, proc)
	return p, err
}

// buildSeen is build, with the paths it found to be which files while it made the
// policy (a kept one's checks, or a new one's record; nil when none): the launch's
// ruleset check takes them as seen (confine.Policy.Seen), not stat'ed twice.
func (f *Feature) buildSeen(a wire.Agent, spec *core.LaunchSpec, needs core.Confinement, sharedTmp string, proc bool) (confine.Policy, map[string]confine.FileID, error) {
	own, notes, err := f.ownGrants(a, spec)
	if err != nil {
		return confine.Policy{}, nil, err
	}
	shared, seen, err := f.shared(a, spec, needs, sharedTmp, proc)
	if err != nil {
		return shared, nil, err
	}
	p, err := withOwn(shared, own, notes)
	return p, seen, err
}

// shared is buildShared's policy, kept (build), and what its checks saw.
func (f *Feature) shared(a wire.Agent, spec *core.LaunchSpec, needs core.Confinement, sharedTmp string, proc bool) (confine.Policy, map[string]confine.FileID, error) {
	key := buildKey(a, spec, needs, sharedTmp, proc)
	f.builds.mu.Lock()
	b := f.builds.m[key]
	f.builds.mu.Unlock()
	if b != nil {
		if seen, ok, watched := b.holds(spec); ok {
			if watched {
				f.builds.watched.Add(1)
			}
			f.builds.mu.Lock()
			f.builds.hits++
			f.builds.mu.Unlock()
			return b.p, seen, nil
		}
	}
	if b != nil {
		f.builds.drop(key, b)
	}
	var w witness
	p, err := f.buildShared(a, spec, needs, sharedTmp, proc, &w)
	if err != nil {
		return p, nil, err
	}
	nb := &built{p: p, w: w}
	if !nb.record() {
		nb.close()
		return p, nil, nil
	}
	f.builds.mu.Lock()
	defer f.builds.mu.Unlock()
	if f.builds.closed {
		nb.close()
		return p, nb.seen, nil
	}
	if old := f.builds.m[key]; old != nil {
		old.close() // another launch's build of the same inputs
	}
	if f.builds.m == nil || len(f.builds.m) >= maxBuilds {
		f.builds.closeAll()
		f.builds.m = map[string]*built{}
	}
	f.builds.m[key] = nb
	f.builds.misses++
	return p, nb.seen, nil
}

// drop forgets key's policy if it is still b (it no longer holds).
func (c *builds) drop(key string, b *built) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m[key] == b {
		delete(c.m, key)
		b.close()
	}
}

// closeAll closes every kept policy's descriptors; c.mu is held.
func (c *builds) closeAll() {
	for k, b := range c.m {
		b.close()
		delete(c.m, k)
	}
}

// Close forgets every policy kept.
func (c *builds) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	c.closeAll()
}

// close closes the descriptors b holds.
func (b *built) close() {
	if b.dead.Swap(true) {
		return
	}
	if w := b.watch.Load(); w != nil {
		w.close()
	}
	for _, e := range b.resolved {
		if e.fd > 0 {
			unix.Close(e.fd)
		}
	}
}

// record takes the inode of each path the build resolved, opening its resolution
// (O_PATH: the descriptor holds it). It says false when one moved under the build
// (the path and its resolution are not one inode, or one exists and the other not):
// such a build is used once, not kept.
func (b *built) record() bool {
	b.resolved = make([]resolvedAs, 0, len(b.w.real))
	for x, r := range b.w.real {
		fd, err := unix.Open(r, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			if _, there := confine.StatID(x); there {
				return false
			}
			b.resolved = append(b.resolved, resolvedAs{x: x, r: r})
			continue
		}
		b.resolved = append(b.resolved, resolvedAs{x: x, r: r, fd: fd, there: true})
		id, ok := confine.FstatID(fd)
		if !ok {
			return false
		}
		if xid, there := confine.StatID(x); !there || xid != id {
			return false
		}
		b.resolved[len(b.resolved)-1].id = id
	}
	b.seen = make(map[string]confine.FileID, 2*len(b.resolved))
	for _, e := range b.resolved {
		if e.there {
			b.seen[e.x], b.seen[e.r] = e.id, e.id
		}
	}
	return true
}

// holds says the file system is still what b's policy was made from, and gives what
// its stats found: each path that exists, by its inode now (confine.Policy.Seen).
// While b's watch is quiet the stats' last answer stands (pathWatch); after the first
// check that held, the watch is set off the spawn's path (arm).
func (b *built) holds(spec *core.LaunchSpec) (seen map[string]confine.FileID, ok, watched bool) {
	if w := b.watch.Load(); w != nil {
		if seen, ok := w.still(); ok && !b.dead.Load() {
			return seen, true, true
		}
	}
	seen, ok = b.check(spec.Argv, spec.Env, spec.Cwd)
	if ok {
		b.arm(spec.Argv, spec.Env, spec.Cwd)
	}
	return seen, ok, false
}

// arm sets b's watch on a goroutine of its own: the watches, then the checks again —
// a change after the watches is heard, one before them is in the checks' answer —
// and, when they hold, the watch stands for them.
func (b *built) arm(argv, env []string, cwd string) {
	if b.dead.Load() || !b.arming.CompareAndSwap(false, true) {
		return
	}
	// The launch's spec changes after it (the launcher's argv): the goroutine keeps copies.
	argv, env = slices.Clone(argv), slices.Clone(env)
	go func() {
		defer b.arming.Store(false)
		w := b.watch.Load()
		if w == nil {
			w = newPathWatch(b.lookedUp(argv, env))
			b.watch.Store(w)
			if b.dead.Load() {
				w.close() // closed meanwhile: close may have read no watch
				return
			}
		}
		gen := w.set()
		if gen == 0 {
			return
		}
		if seen, ok := b.check(argv, env, cwd); ok {
			w.hold(gen, seen)
		}
	}()
}

// lookedUp are the paths check stats: each resolved path and its resolution, each
// path whose existence decided a grant, and the program's candidates on PATH up to
// the one found.
func (b *built) lookedUp(argv, env []string) []string {
	var paths []string
	for _, e := range b.resolved {
		paths = append(paths, e.x, e.r)
	}
	for _, e := range b.w.exists {
		paths = append(paths, e.path)
	}
	if len(argv) > 0 && !strings.Contains(argv[0], "/") {
		for _, c := range pathCandidates(argv[0], env) {
			paths = append(paths, c)
			if c == b.w.bin {
				break
			}
		}
	}
	return paths
}

// check is holds' stats.
func (b *built) check(argv, env []string, cwd string) (map[string]confine.FileID, bool) {
	seen := make(map[string]confine.FileID, len(b.seen)+len(b.w.exists))
	for _, e := range b.resolved {
		id, there := confine.StatID(e.x)
		if there != e.there || id != e.id {
			return nil, false
		}
		if there {
			seen[e.x], seen[e.r] = id, id
		}
		if there && e.r != e.x {
			if rid, ok := confine.StatID(e.r); !ok || rid != e.id {
				return nil, false
			}
		}
	}
	for _, e := range b.w.exists {
		id, there := confine.StatID(e.path)
		if there != e.there {
			return nil, false
		}
		if there {
			seen[e.path] = id
		}
	}
	if lookPath(argv, env, cwd) != b.w.bin || b.dead.Load() {
		return nil, false
	}
	return seen, true
}

// buildKey is every input of buildFresh but the file system (and the feature's own
// options, which do not change).
func buildKey(a wire.Agent, spec *core.LaunchSpec, needs core.Confinement, sharedTmp string, proc bool) string {
	var k strings.Builder
	add := func(s ...string) {
		for _, x := range s {
			k.WriteString(x)
			k.WriteByte(0)
		}
		k.WriteByte(1)
	}
	ports := func(ps []int) {
		for _, p := range ps {
			k.WriteString(strconv.Itoa(p))
			k.WriteByte(0)
		}
		k.WriteByte(1)
	}
	argv0 := ""
	if len(spec.Argv) > 0 {
		argv0 = spec.Argv[0]
	}
	cwd := "" // the agent's folder is its own part (ownGrants), not the kept one's
	if strings.Contains(argv0, "/") && !filepath.IsAbs(argv0) {
		cwd = spec.Cwd // the program is found from it (lookPath)
	}
	add(cwd, argv0, envValue(spec.Env, "HOME"), envValue(spec.Env, "TMPDIR"), envValue(spec.Env, "PATH"),
		sharedTmp, strconv.FormatBool(proc), varTmp)
	add(needs.RW...)
	add(needs.ROX...)
	add(needs.RO...)
	add(needs.Notes...)
	ports(needs.Ports)
	if a.Sandbox != nil {
		add(a.Sandbox.RW...)
		add(a.Sandbox.ROX...)
		ports(a.Sandbox.Ports)
	}
	return k.String()
}
