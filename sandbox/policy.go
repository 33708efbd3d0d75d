package sandbox

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"orcr/core"
	"orcr/core/wire"
	"orcr/sandbox/confine"
)

// The toolchain every confined agent may read and run: the system's programs and
// libraries. /usr covers /usr/local (the Go toolchain, npm's global installs).
var toolchain = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/opt"}

// What every confined agent may read: the system's configuration (certificates, the
// resolver, users), /sys, and the machine-wide files of /proc. Not /proc as a whole:
// on this kernel (6.18, ABI 7) Landlock lets a confined process read
// /proc/PID/environ of a process outside its sandbox (the server's, another agent's:
// their credentials), so no other process's /proc/PID is granted; the agent's own
// is (confine.Policy.ProcSelf).
var readOnly = []string{"/etc", "/sys", "/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/loadavg",
	"/proc/uptime", "/proc/version", "/proc/filesystems", "/proc/mounts", "/proc/sys"}

// The devices a terminal program opens: read-write with their ioctls.
var devices = []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty",
	"/dev/ptmx", "/dev/pts", "/dev/shm"}

// secretDirs are parts of $HOME no grant may open, even through a symlink: keys and
// tokens. A grant that resolves into one of them is refused, with a note.
var secretDirs = []string{".ssh", ".gnupg", ".aws", ".config/gh", ".netrc", ".docker", ".kube", ".git-credentials",
	".config/gcloud", ".azure", ".password-store"}

// build is the policy of one launch of a: its cwd (and the repository's git dir when
// the cwd is a worktree of it), /tmp, what the adapter needs, what the agent's
// sandbox adds; the toolchain, orcr and the agent's program; port 443 and the
// adapter's ports; orcr's socket.
//
// proc grants /proc as a whole instead of its machine-wide files and the launcher's
// own /proc/PID: an agent forked by a server thread, whose pid is not known before the
// fork, and which holds no capability (the thread drops them all first), so Landlock
// keeps other processes' environ, maps and memory closed to it (Options.InProcess).
//
// The policy is made of two parts: the agent's own (ownGrants: its folder, and the
// repository's git dir when the folder is a worktree of it), made at every launch,
// and the rest (buildShared), the same for every agent launched with the same
// inputs in any folder, which build keeps.
func (f *Feature) buildFresh(a wire.Agent, spec *core.LaunchSpec, needs core.Confinement, sharedTmp string, proc bool, w *witness) (confine.Policy, error) {
	own, notes, err := f.ownGrants(a, spec)
	if err != nil {
		return confine.Policy{}, err
	}
	shared, err := f.buildShared(a, spec, needs, sharedTmp, proc, w)
	if err != nil {
		return shared, err
	}
	return withOwn(shared, own, notes)
}

// ownGrants are the agent's own paths, resolved, checked (a refused folder is an
// error) and granted read-write: its folder, and the repository's git dir when the
// folder is a worktree of it (commits land there), with the notes they make.
func (f *Feature) ownGrants(a wire.Agent, spec *core.LaunchSpec) (own, notes []string, err error) {
	g := granter{home: envValue(spec.Env, "HOME"), notes: &notes, keep: f.kept(), real: realPaths{}}
	cwd := spec.Cwd
	if cwd == "" {
		cwd = a.Cwd
	}
	if err := g.grant(&own, cwd, "the agent's folder", true); err != nil {
		return nil, nil, err
	}
	if gd := gitDir(cwd); gd != "" {
		_ = g.grant(&own, gd, "the repository's git dir (commits of a worktree land there)", false)
	}
	return own, notes, nil
}

// withOwn is shared with the agent's own paths first among its read-write ones (and
// named as its own: confine.Policy.Own), their notes first: the policy a build of
// both at once gives. shared's slices are not changed (a kept policy's), and shared
// passed Check when it was built: only the own paths are checked here.
func withOwn(shared confine.Policy, own, notes []string) (confine.Policy, error) {
	for _, o := range own {
		if err := confine.CheckPath(o); err != nil {
			return confine.Policy{}, err
		}
	}
	p := shared
	p.RW = append(slices.Clone(own), slices.DeleteFunc(slices.Clone(shared.RW), func(s string) bool { return slices.Contains(own, s) })...)
	p.Own = own
	p.Notes = append(notes, shared.Notes...)
	return p, nil
}

// buildShared is the policy but for the agent's own paths (ownGrants). w, when not
// nil, records what of the file system it was made from (build's cache:
// built.holds).
func (f *Feature) buildShared(a wire.Agent, spec *core.LaunchSpec, needs core.Confinement, sharedTmp string, proc bool, w *witness) (confine.Policy, error) {
	home := envValue(spec.Env, "HOME")
	var notes []string
	rp := realPaths{}
	if w != nil {
		w.real = rp
	}
	g := granter{home: home, notes: &notes, keep: f.kept(), real: rp}
	var p confine.Policy
	// there says path exists (a stat): what the toolchain's, /etc's and git's
	// settings' grants depend on.
	there := func(path string) bool {
		_, err := os.Stat(path)
		if w != nil {
			w.exists = append(w.exists, existed{path, err == nil})
		}
		return err == nil
	}

	tmp := "/tmp"
	if t := envValue(spec.Env, "TMPDIR"); t != "" {
		tmp = t
	}
	_ = g.grant(&p.RW, tmp, "temporary files", false)
	if sharedTmp != "" {
		if f.isHome(sharedTmp, home, g.real) {
			// $HOME (or orcr's home) is this folder itself: its entries are $HOME's
			// (.ssh among them), so nothing of it but the agent's own TMPDIR.
			notes = append(notes, fmt.Sprintf("%s holds $HOME or orcr's home: not granted, nor anything in it but the agent's own TMPDIR (%s); "+
				"--sandbox-rw names another folder of it", sharedTmp, tmp))
		} else {
			// /tmp stays writable as DESIGN §16 says, less the entries that hold
			// $HOME or orcr's home.
			f.tmpEntries(&p, g, sharedTmp, home)
		}
	}
	if there(varTmp) {
		// SQLite (codex's state) picks /var/tmp before /tmp when TMPDIR is unset: it
		// asks access(2), which Landlock does not answer, so it must be writable —
		// unless it holds $HOME or orcr's home (agents' policies are there).
		if f.holdsHome(varTmp, home, g.real) {
			notes = append(notes, varTmp+" holds $HOME or orcr's home: not granted")
		} else {
			_ = g.grant(&p.RW, varTmp, "temporary files (SQLite's)", false)
		}
	}
	for _, d := range needs.RW {
		_ = g.grant(&p.RW, d, "the provider's state", false)
	}
	if a.Sandbox != nil {
		for _, d := range a.Sandbox.RW {
			x, err := confine.ExpandHome(d, home)
			if err != nil {
				return p, fmt.Errorf("sandbox rw: %w", err)
			}
			if err := g.grant(&p.RW, x, "asked for (rw)", true); err != nil {
				return p, err
			}
		}
	}

	for _, d := range toolchain {
		if there(d) {
			p.ROX = append(p.ROX, d)
		}
	}
	if f.o.Self != "" {
		_ = g.grant(&p.ROX, f.o.Self, "orcr itself (hooks, orcr run done)", false)
	}
	bin := lookPath(spec.Argv, spec.Env, spec.Cwd)
	if w != nil {
		w.bin = bin
	}
	if bin != "" {
		_ = g.grant(&p.ROX, bin, "the agent's program", false)
	}
	for _, d := range needs.ROX {
		_ = g.grant(&p.ROX, d, "the provider's install", false)
	}
	if a.Sandbox != nil {
		for _, d := range a.Sandbox.ROX {
			x, err := confine.ExpandHome(d, home)
			if err != nil {
				return p, fmt.Errorf("sandbox rox: %w", err)
			}
			if err := g.grant(&p.ROX, x, "asked for (rox)", true); err != nil {
				return p, err
			}
		}
	}
	for _, d := range readOnly {
		if proc && strings.HasPrefix(d, "/proc/") {
			continue
		}
		if there(d) {
			p.RO = append(p.RO, d)
		}
	}
	if proc {
		p.RO = append(p.RO, "/proc")
		notes = append(notes, "/proc read-only as a whole (the agent's and its children's own /proc/self among it): the agent "+
			"holds no capability, so Landlock keeps the environ, maps and memory of processes outside its sandbox closed to it")
	} else {
		p.ProcSelf = true
	}
	// (A resolv.conf that cannot be resolved is "/etc/resolv.conf" itself: not added.)
	if r := rp.get("/etc/resolv.conf"); !strings.HasPrefix(r, "/etc/") {
		p.RO = append(p.RO, r)
	}
	if home != "" {
		// git's own settings (name, email); never its credentials.
		for _, f := range []string{".gitconfig", ".config/git/config", ".config/git/ignore"} {
			if there(filepath.Join(home, f)) {
				p.RO = append(p.RO, filepath.Join(home, f))
			}
		}
	}
	for _, d := range needs.RO {
		_ = g.grant(&p.RO, d, "the provider's settings", false)
	}
	p.Dev = devices

	p.Ports = []int{443}
	p.Ports = append(p.Ports, needs.Ports...)
	if a.Sandbox != nil {
		p.Ports = append(p.Ports, a.Sandbox.Ports...)
	}
	slices.Sort(p.Ports)
	p.Ports = slices.Compact(p.Ports)
	p.Socket = f.o.Socket
	p.MaxABI = f.o.MaxABI
	p.Notes = append(notes, needs.Notes...)
	return p, p.Check() // a refused part is not kept (build)
}

// granter adds paths to a list, resolving symlinks first: what Landlock grants is the
// target, so the target is what is checked and listed.
type granter struct {
	home  string
	notes *[]string
	keep  []keptDir
	// real memoizes the links resolved in one policy's build ($HOME and orcr's home
	// were resolved again for every grant: most of a build's time).
	real realPaths
}

// realPaths is path → the path with its links resolved (or cleaned, when it cannot
// be), memoized for one build: the same instant's answer for the same path.
type realPaths map[string]string

func (rp realPaths) get(x string) string {
	if r, ok := rp[x]; ok {
		return r
	}
	r, err := filepath.EvalSymlinks(x)
	if err != nil {
		r = filepath.Clean(x)
	}
	if rp != nil {
		rp[x] = r
	}
	return r
}

// keptDir is a folder no grant may contain, and what it holds.
type keptDir struct{ path, what string }

// grant adds path (resolved) to list. A path that resolves into a secret part of
// $HOME, to $HOME or above it, or to orcr's home or config folder or above them, is
// refused: an error when strict (the agent's own
// folder, a grant asked for), a note otherwise. A path that does not exist is kept:
// the launcher warns and skips it.
func (g granter) grant(list *[]string, path, why string, strict bool) error {
	if path == "" {
		return nil
	}
	if err := confine.CheckPath(path); err != nil {
		return g.refuse(strict, fmt.Errorf("%s: %w", why, err))
	}
	real := g.real.get(path)
	if real != filepath.Clean(path) {
		*g.notes = append(*g.notes, fmt.Sprintf("%s → %s (%s): the link's target is what is granted", path, real, why))
	}
	for _, k := range g.keep {
		if real == k.path || strings.HasPrefix(k.path, strings.TrimSuffix(real, "/")+"/") {
			return g.refuse(strict, fmt.Errorf("%s: %s holds %s at %s, which a confined agent must not reach: "+
				"name a folder that does not hold it", why, path, k.what, k.path))
		}
	}
	if g.home != "" {
		home := g.real.get(g.home)
		if real == home || strings.HasPrefix(home, strings.TrimSuffix(real, "/")+"/") {
			return g.refuse(strict, fmt.Errorf("%s: %s would open all of $HOME (%s): name the folder the agent needs", why, path, home))
		}
		for _, s := range secretDirs {
			d := filepath.Join(home, s)
			if real == d || strings.HasPrefix(real, d+"/") {
				return g.refuse(strict, fmt.Errorf("%s: %s resolves to %s, which holds credentials: refused", why, path, real))
			}
		}
	}
	if !slices.Contains(*list, real) {
		*list = append(*list, real)
	}
	return nil
}

func (g granter) refuse(strict bool, err error) error {
	if strict {
		return err
	}
	*g.notes = append(*g.notes, "refused: "+err.Error())
	return nil
}

// gitDir is the common git directory of the repository cwd is in when it lies
// outside cwd (a linked worktree keeps its objects in the main repository's .git; a
// folder below the repository's top has .git above it); "" otherwise.
func gitDir(cwd string) string {
	for dir := cwd; ; dir = filepath.Dir(dir) {
		dotgit := filepath.Join(dir, ".git")
		st, err := os.Lstat(dotgit)
		if err == nil {
			if st.IsDir() {
				if dir == cwd {
					return ""
				}
				return dotgit
			}
			return linkedCommonDir(dotgit)
		}
		if dir == filepath.Dir(dir) {
			return ""
		}
	}
}

// linkedCommonDir reads a worktree's .git file ("gitdir: X") and X/commondir.
func linkedCommonDir(dotgit string) string {
	b, err := os.ReadFile(dotgit)
	if err != nil {
		return ""
	}
	line, _, _ := strings.Cut(string(b), "\n")
	gd, ok := strings.CutPrefix(strings.TrimSpace(line), "gitdir:")
	if !ok {
		return ""
	}
	gd = strings.TrimSpace(gd)
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(filepath.Dir(dotgit), gd)
	}
	common := gd
	if c, err := os.ReadFile(filepath.Join(gd, "commondir")); err == nil {
		cd := strings.TrimSpace(string(c))
		if !filepath.IsAbs(cd) {
			cd = filepath.Join(gd, cd)
		}
		common = cd
	}
	return filepath.Clean(common)
}

// lookPath finds argv[0] on the PATH of env, as the launcher will.
func lookPath(argv, env []string, cwd string) string {
	if len(argv) == 0 {
		return ""
	}
	name := argv[0]
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) {
			name = filepath.Join(cwd, name)
		}
		return name
	}
	for _, c := range pathCandidates(name, env) {
		if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return c
		}
	}
	return ""
}

// pathCandidates are the files lookPath tries for a program name without a slash, in
// order: the name in each absolute folder of PATH (a relative one would depend on the
// agent's folder: skipped).
func pathCandidates(name string, env []string) []string {
	var cs []string
	for _, dir := range filepath.SplitList(envValue(env, "PATH")) {
		if dir != "" && filepath.IsAbs(dir) {
			cs = append(cs, filepath.Join(dir, name))
		}
	}
	return cs
}

func envValue(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == key {
			return v
		}
	}
	return ""
}

// refusedLines are the lines of text that show an access refused, the last max.
func refusedLines(text string, max int) []string {
	var out []string
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if strings.Contains(l, "Permission denied") || strings.Contains(l, "EACCES") ||
			strings.Contains(l, "Operation not permitted") || strings.Contains(l, "permission denied") {
			out = append(out, l)
		}
	}
	if len(out) > max {
		out = out[len(out)-max:]
	}
	return out
}

// tmpEntries grants, read-write, each entry of a /tmp that holds $HOME or orcr's home
// except the ones that hold them: what granting /tmp would give, less those. The
// policy names the folder and what is kept out (confine.Entries); the entries are
// read when the rules are made, as they are then. New entries made in /tmp itself
// by the agent are not granted (TMPDIR is the agent's own).
func (f *Feature) tmpEntries(p *confine.Policy, g granter, tmp, home string) {
	resolve := g.real.get
	e := &confine.Entries{Dir: resolve(tmp)}
	for _, x := range []string{home, f.o.Home} {
		if x != "" && filepath.IsAbs(x) {
			e.Keep = append(e.Keep, resolve(x))
		}
	}
	p.Entries = e
	*g.notes = append(*g.notes, fmt.Sprintf("%s holds $HOME or orcr's home: not granted; each of its other entries is (read-write), "+
		"as it is when the agent starts; TMPDIR is the agent's own", tmp))
}

// varTmp is the other temporary folder every confined agent may write (a variable
// for the test that puts orcr's home in one).
var varTmp = "/var/tmp"

// holdsHome reports whether dir is, or holds, $HOME or orcr's home (after symlinks).
func (f *Feature) holdsHome(dir, home string, rp realPaths) bool {
	real := rp.get
	d := strings.TrimSuffix(real(dir), "/")
	for _, x := range []string{home, f.o.Home} {
		if x == "" {
			continue
		}
		if r := real(x); r == d || strings.HasPrefix(r, d+"/") {
			return true
		}
	}
	return false
}

// isHome reports whether dir is $HOME or orcr's home itself (after symlinks).
func (f *Feature) isHome(dir, home string, rp realPaths) bool {
	real := rp.get
	d := real(dir)
	for _, x := range []string{home, f.o.Home} {
		if x != "" && real(x) == d {
			return true
		}
	}
	return false
}
