package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"orcr/testutil/clis"
	"orcr/testutil/wait"

	"golang.org/x/sys/unix"
)

// confined runs fn on an OS thread confined by c to p (Ready: the thread kept for p).
func confined(t *testing.T, c *Rulesets, p Policy, fn func()) {
	t.Helper()
	if _, err := c.Ready(p, 0).Run(func(Report) error { fn(); return nil }); err != nil {
		t.Fatal(err)
	}
}

// landlockFolders skips the test without Landlock here, and makes the folders names in
// a temporary folder, returned in order.
func landlockFolders(t *testing.T, names ...string) []string {
	t.Helper()
	if _, err := KernelABI(); err != nil {
		clis.Missingf(t, "no Landlock here: %v", err)
	}
	root := t.TempDir()
	var dirs []string
	for _, n := range names {
		d := filepath.Join(root, n)
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	return dirs
}

func writes(dir string) error {
	return os.WriteFile(filepath.Join(dir, "f"), []byte("x"), 0o600)
}

// A ruleset is built once per policy and used again while its paths are the inodes
// it holds; a folder removed and made again at the same path is a new inode, which
// the old rule would not grant: the ruleset is built again and the new folder is
// writable. Same for one entry of a folder granted entry by entry (checked from one
// read of the folder), and a mountpoint (/dev/pts) does not defeat the reuse.
func TestRulesetsReusedUntilAPathChanges(t *testing.T) {
	if _, err := KernelABI(); err != nil {
		clis.Missingf(t, "no Landlock here: %v", err)
	}
	root := t.TempDir()
	work, outside, many := filepath.Join(root, "work"), filepath.Join(root, "outside"), filepath.Join(root, "many")
	var entries []string
	for i := range minDirRead + 4 {
		entries = append(entries, filepath.Join(many, fmt.Sprint("e", i)))
	}
	for _, d := range append([]string{work, outside}, entries...) {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	p := Policy{RW: append([]string{work}, entries...), ROX: []string{"/usr", "/lib", "/lib64", "/bin"},
		Dev: []string{"/dev/null", "/dev/pts", "/dev/shm", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty"}}
	var c Rulesets
	defer c.Close()
	check := func(step string, hits, builds int, dirs ...string) {
		t.Helper()
		var errs []error
		confined(t, &c, p, func() {
			for _, d := range dirs {
				errs = append(errs, writes(d))
			}
			errs = append(errs, writes(outside))
		})
		for i, d := range dirs {
			if errs[i] != nil {
				t.Errorf("%s: %s not writable: %v", step, d, errs[i])
			}
		}
		if errs[len(dirs)] == nil {
			t.Errorf("%s: the folder outside the policy was written", step)
		}
		if c.Hits != hits || c.Builds != builds {
			t.Errorf("%s: %d hits %d builds, want %d %d", step, c.Hits, c.Builds, hits, builds)
		}
	}
	check("first", 0, 1, work, entries[3])
	check("same policy", 1, 1, work, entries[3])
	os.RemoveAll(work)
	os.MkdirAll(work, 0o700)
	check("work made again", 1, 2, work)
	check("after the rebuild", 2, 2, work)
	os.RemoveAll(entries[5])
	os.MkdirAll(entries[5], 0o700)
	check("an entry made again", 2, 3, entries[5])
	os.RemoveAll(entries[7])
	check("an entry gone", 2, 4, entries[6])
	os.MkdirAll(entries[7], 0o700)
	check("an entry back", 2, 5, entries[7])
	if dirReads.Load() == 0 {
		t.Error("the many entries of one folder were not checked from a read of it")
	}
	if c.Len() != 1 {
		t.Fatalf("%d rulesets kept for one policy", c.Len())
	}
}

// A server's policy (the devices of /dev, the toolchain, /etc, /proc, the agent's
// folder) is checked with a stat per path before each reuse, never by listing a
// folder: /dev's nine devices made valid list /dev (107 entries here), 2–3× the
// stats' cost.
func TestRulesetValidStatsAServersPolicy(t *testing.T) {
	if _, err := KernelABI(); err != nil {
		clis.Missingf(t, "no Landlock here: %v", err)
	}
	work := t.TempDir()
	p := Policy{RW: []string{work, "/var/tmp"}, ROX: []string{"/usr", "/bin", "/lib"}, RO: []string{"/etc", "/proc"},
		Dev: []string{"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty", "/dev/ptmx",
			"/dev/pts", "/dev/shm"}}
	var c Rulesets
	defer c.Close()
	confined(t, &c, p, func() {})
	before := dirReads.Load()
	confined(t, &c, p, func() {})
	if c.Hits != 1 {
		t.Fatalf("%d hits, %d builds: the ruleset was not reused", c.Hits, c.Builds)
	}
	if n := dirReads.Load() - before; n != 0 {
		t.Errorf("the reuse listed %d folders, want a stat per path", n)
	}
}

// The cache keeps at most maxRulesets, closing the least recently used.
func TestRulesetsBounded(t *testing.T) {
	if _, err := KernelABI(); err != nil {
		clis.Missingf(t, "no Landlock here: %v", err)
	}
	root := t.TempDir()
	var c Rulesets
	defer c.Close()
	for i := range maxRulesets + 5 {
		d := filepath.Join(root, fmt.Sprint(i))
		os.MkdirAll(d, 0o700)
		confined(t, &c, Policy{RW: []string{d}}, func() {})
	}
	if c.Len() != maxRulesets || c.Builds != maxRulesets+5 {
		t.Fatalf("%d kept, %d built", c.Len(), c.Builds)
	}
}

// A folder granted entry by entry (Policy.Entries, a /tmp that holds a home) is
// followed from one restriction to the next: an entry made since gets a rule added
// (no rebuild), an entry removed and made again too (the removed inode is
// unreachable), and an entry moved out of the folder has the ruleset built again, so
// the moved folder is not writable; the kept entry, a symlink's target and anything
// outside never are.
func TestRulesetsFollowEntries(t *testing.T) {
	if _, err := KernelABI(); err != nil {
		clis.Missingf(t, "no Landlock here: %v", err)
	}
	root := t.TempDir()
	work, outside, many := filepath.Join(root, "work"), filepath.Join(root, "outside"), filepath.Join(root, "many")
	home := filepath.Join(many, "home")
	dirs := []string{work, outside, filepath.Join(home, "orcr")}
	for i := range 12 {
		dirs = append(dirs, filepath.Join(many, fmt.Sprint("e", i)))
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	os.WriteFile(filepath.Join(many, "file"), []byte("x"), 0o600)
	os.Symlink(outside, filepath.Join(many, "link"))
	p := Policy{RW: []string{work}, ROX: []string{"/usr", "/lib", "/lib64", "/bin"},
		Entries: &Entries{Dir: many, Keep: []string{filepath.Join(home, "orcr")}}}
	var c Rulesets
	defer c.Close()
	e := func(i int) string { return filepath.Join(many, fmt.Sprint("e", i)) }
	check := func(step string, hits, builds int, yes, no []string) {
		t.Helper()
		var got []error
		confined(t, &c, p, func() {
			for _, d := range append(yes, no...) {
				got = append(got, writes(d))
			}
		})
		for i, d := range yes {
			if got[i] != nil {
				t.Errorf("%s: %s not writable: %v", step, d, got[i])
			}
		}
		for i, d := range no {
			if got[len(yes)+i] == nil {
				t.Errorf("%s: %s was written", step, d)
			}
		}
		if c.Hits != hits || c.Builds != builds {
			t.Errorf("%s: %d hits %d builds, want %d %d", step, c.Hits, c.Builds, hits, builds)
		}
	}
	never := []string{outside, home, filepath.Join(home, "orcr"), filepath.Join(many, "link"), many}
	check("first", 0, 1, []string{work, e(3), e(11)}, never)
	if err := os.WriteFile(filepath.Join(many, "file"), []byte("y"), 0o600); err != nil {
		t.Fatal(err)
	}
	check("same", 1, 1, []string{e(3)}, never)
	// The folder was not listed again (a file's content changed): nothing to add,
	// the ruleset's rules are not gone through again.
	if c.Syncs != 1 {
		t.Errorf("same: %d syncs, want 1 (the first)", c.Syncs)
	}
	os.MkdirAll(e(12), 0o700)
	check("an entry made since", 2, 1, []string{e(12)}, never)
	if c.Syncs != 2 {
		t.Errorf("an entry made since: %d syncs, want 2", c.Syncs)
	}
	os.RemoveAll(e(5))
	os.MkdirAll(e(5), 0o700)
	check("an entry removed and made again", 3, 1, []string{e(5)}, never)
	moved := filepath.Join(root, "moved")
	if err := os.Rename(e(7), moved); err != nil {
		t.Fatal(err)
	}
	check("an entry moved out", 3, 2, []string{e(6)}, append([]string{moved}, never...))
	check("after", 4, 2, []string{e(6)}, append([]string{moved}, never...))
}

// A folder granted entry by entry is listed again only when its watch saw an entry
// made, removed or moved in or out, or the path is another folder now: each of them
// is followed (an entry made is tracked, one moved out is reported moved), and an
// unchanged folder is not listed again.
func TestTrackerListsOnlyAfterAChange(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "tmp")
	for _, d := range []string{filepath.Join(dir, "a"), filepath.Join(dir, "b"), filepath.Join(root, "elsewhere")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	tr := &tracker{dir: dir, watched: true}
	defer tr.close()
	step := func(what string, lists int, tracked []string, moved int) {
		t.Helper()
		m, err := tr.refresh()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		var names []string
		for n := range tr.m {
			names = append(names, n)
		}
		slices.Sort(names)
		if tr.lists != lists || !slices.Equal(names, tracked) || len(m) != moved {
			t.Errorf("%s: %d listings, tracked %q, %d moved; want %d, %q, %d", what, tr.lists, names, len(m), lists, tracked, moved)
		}
	}
	step("first", 1, []string{"a", "b"}, 0)
	if tr.ifd <= 0 {
		t.Fatal("no watch on the folder (inotify)")
	}
	os.WriteFile(filepath.Join(dir, "a", "inside"), []byte("x"), 0o600) // not an entry of dir
	step("unchanged", 1, []string{"a", "b"}, 0)
	step("unchanged again", 1, []string{"a", "b"}, 0)
	os.Mkdir(filepath.Join(dir, "c"), 0o700)
	step("an entry made", 2, []string{"a", "b", "c"}, 0)
	step("unchanged after", 2, []string{"a", "b", "c"}, 0)
	if err := os.Rename(filepath.Join(dir, "b"), filepath.Join(root, "elsewhere", "b")); err != nil {
		t.Fatal(err)
	}
	step("an entry moved out", 3, []string{"a", "c"}, 1)
	os.Remove(filepath.Join(dir, "c"))
	step("an entry removed", 4, []string{"a"}, 0)
	if err := os.Rename(filepath.Join(root, "elsewhere", "b"), filepath.Join(dir, "b")); err != nil {
		t.Fatal(err)
	}
	step("an entry moved in", 5, []string{"a", "b"}, 0)
	// The folder moved away and another made at its path: its entries are the new
	// folder's (the old watch sees nothing of it).
	if err := os.Rename(dir, filepath.Join(root, "old")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "z"), 0o700); err != nil {
		t.Fatal(err)
	}
	step("another folder at the path", 6, []string{"z"}, 2)
	step("the new folder unchanged", 6, []string{"z"}, 0)
	os.Mkdir(filepath.Join(dir, "y"), 0o700)
	step("an entry made in the new folder", 7, []string{"y", "z"}, 0)
	// The path a link re-pointed to another folder: no event on the watched one.
	other := filepath.Join(root, "other")
	if err := os.MkdirAll(filepath.Join(other, "x"), 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	ltr := &tracker{dir: link, watched: true}
	defer ltr.close()
	if _, err := ltr.refresh(); err != nil || len(ltr.m) != 2 {
		t.Fatalf("through a link: %v, %d tracked", err, len(ltr.m))
	}
	if err := os.Symlink(other, link+".new"); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(link+".new", link); err != nil {
		t.Fatal(err)
	}
	if _, err := ltr.refresh(); err != nil || len(ltr.m) != 1 || ltr.m["x"].fd == 0 || ltr.lists != 2 {
		t.Fatalf("the link re-pointed: %v, tracked %v after %d listings; want x alone", err, ltr.m, ltr.lists)
	}
}

// Agents in folders of their own (Own) get their ruleset from one built ahead of the
// rest of their policy, with their own folder added: each writes its folder, and
// none the folder of the agent before it, nor one outside; a spare whose paths
// changed since it was built (a granted folder made again) is not used.
func TestSpareRulesetsGrantOnlyTheirOwnFolder(t *testing.T) {
	dirs := landlockFolders(t, "shared", "outside")
	shared, outside := dirs[0], dirs[1]
	root := filepath.Dir(shared)
	var c Rulesets
	defer c.Close()
	c.watch = true // a server's (Run's) cache: spares are its alone
	policy := func(i int) (Policy, string) {
		d := filepath.Join(root, fmt.Sprint("agent", i))
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
		return Policy{RW: []string{d, shared}, Own: []string{d}, ROX: []string{"/usr", "/bin"}}, d
	}
	prev := ""
	for i := range 6 {
		p, own := policy(i)
		if i == 4 {
			// A granted folder made again: the spare built before holds the old inode.
			if err := os.RemoveAll(shared); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(shared, 0o700); err != nil {
				t.Fatal(err)
			}
		}
		hits := c.SpareHits
		if i > 0 {
			// The spare for the next agent is built off the spawn's path: there before it.
			wait.For(t, 10*time.Second, "a spare ruleset built ahead", func() bool {
				c.spares.mu.Lock()
				defer c.spares.mu.Unlock()
				return len(c.spares.m) == 1
			})
			// Made from the shared paths held, not from the paths each time.
			c.spares.mu.Lock()
			held := len(c.spares.held)
			c.spares.mu.Unlock()
			if held != 1 {
				t.Fatalf("agent %d: %d policies held for the spares, want 1", i, held)
			}
		}
		var ownErr, sharedErr, prevErr, outErr error
		confined(t, &c, p, func() {
			ownErr, sharedErr, outErr = writes(own), writes(shared), writes(outside)
			if prev != "" {
				prevErr = writes(prev)
			}
		})
		if ownErr != nil || sharedErr != nil {
			t.Fatalf("agent %d: own folder %v, shared folder %v", i, ownErr, sharedErr)
		}
		if outErr == nil || (prev != "" && prevErr == nil) {
			t.Fatalf("agent %d wrote outside its policy: outside %v, the agent before's folder %v", i, outErr, prevErr)
		}
		switch {
		case i == 0 || i == 4:
			if c.SpareHits != hits {
				t.Fatalf("agent %d: a spare used (first agent, or one whose folder changed)", i)
			}
		case c.SpareHits != hits+1:
			t.Fatalf("agent %d: its ruleset built on the spawn's path, not from the spare", i)
		}
		prev = own
	}
}

// A launch's Seen paths stand for a stat of the kept ruleset's (and a spare's) check
// while they are recent: a path seen as the inode the ruleset holds is not looked at
// again (here a folder removed since, which a stat would have caught, is not); one seen
// as another inode has the ruleset built again without a look either; Seen older than
// seenFor is not used.
func TestRulesetsTakeSeenPaths(t *testing.T) {
	if _, err := KernelABI(); err != nil {
		clis.Missingf(t, "no Landlock here: %v", err)
	}
	root := t.TempDir()
	work, gone := filepath.Join(root, "work"), filepath.Join(root, "gone")
	for _, d := range []string{work, gone} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	p := Policy{RW: []string{work, gone}, ROX: []string{"/usr", "/bin"}}
	var c Rulesets
	defer c.Close()
	run := func(step string, p Policy, hits, builds int) {
		t.Helper()
		if _, err := c.Ready(p, 0).Run(func(Report) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if c.Hits != hits || c.Builds != builds {
			t.Errorf("%s: %d hits %d builds, want %d %d", step, c.Hits, c.Builds, hits, builds)
		}
	}
	run("first", p, 0, 1)
	workID, _ := StatID(work)
	goneID, _ := StatID(gone)
	if err := os.Remove(gone); err != nil {
		t.Fatal(err)
	}
	seen := p
	seen.Seen = map[string]FileID{work: workID, gone: goneID, "/usr": mustStat(t, "/usr"), "/bin": mustStat(t, "/bin")}
	seen.SeenAt = time.Now()
	run("seen as held", seen, 1, 1)
	other := seen
	other.Seen = map[string]FileID{work: goneID, gone: goneID}
	other.SeenAt = time.Now()
	run("seen as another inode", other, 1, 2)
	// Seen long ago, work as another inode is not taken: a stat finds it the one the
	// ruleset holds, a hit.
	stale := other
	stale.SeenAt = time.Now().Add(-2 * seenFor)
	run("seen long ago", stale, 2, 2)
}

func mustStat(t *testing.T, path string) FileID {
	t.Helper()
	id, ok := StatID(path)
	if !ok {
		t.Fatalf("%s: not there", path)
	}
	return id
}

// A confinement made ready ahead of its start (Ready) whose thread is stopped before
// the start — another launch of the policy found a path changed and built its
// ruleset again — is made again when the start comes: the agent starts from a new
// thread, confined to the folder as it is now, never from the stopped one nor
// unconfined.
func TestReadyThreadStoppedBeforeItsStart(t *testing.T) {
	dirs := landlockFolders(t, "work", "outside")
	work, outside := dirs[0], dirs[1]
	p := Policy{RW: []string{work}, ROX: []string{"/usr", "/lib", "/lib64", "/bin"}}
	var c Rulesets
	defer c.Close()
	pd := c.Ready(p, 0)
	if pd.err != nil {
		t.Fatal(pd.err)
	}
	first := pd.w.tid
	// The folder made again (a new inode); the next launch of the policy builds its
	// ruleset again, which stops the thread the first launch was made ready with.
	if err := os.RemoveAll(work); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(work, 0o700); err != nil {
		t.Fatal(err)
	}
	p.Seen = nil
	if pd2 := c.Ready(p, 0); pd2.err != nil || pd2.w.tid == first {
		t.Fatalf("the second launch: %v, thread %d (the first's %d)", pd2.err, pd2.w.tid, first)
	}
	var tid int
	var in, out error
	if _, err := pd.Run(func(Report) error {
		tid, in, out = unix.Gettid(), writes(work), writes(outside)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if tid == first || in != nil || out == nil {
		t.Fatalf("started on thread %d (the stopped one %d): write in the new folder %v, outside %v", tid, first, in, out)
	}
}

// The work made ahead for the next new policy — a thread, the spare ruleset of the
// policy's shared part — waits while a confinement is made ready and is started once
// the agent is forked (Pending.Run): begun when the spawn took the last ones, it ran
// beside that spawn's own start.
func TestWorkMadeAheadWaitsForTheFork(t *testing.T) {
	dirs := landlockFolders(t, "own", "shared")
	own, shared := dirs[0], dirs[1]
	var c Rulesets
	defer c.Close()
	pd := c.Ready(Policy{RW: []string{own, shared}, Own: []string{own}, ROX: []string{"/usr", "/bin"}}, 0)
	if pd.err != nil {
		t.Fatal(pd.err)
	}
	spares := func() int {
		c.spares.mu.Lock()
		defer c.spares.mu.Unlock()
		return len(c.spares.m)
	}
	wait.Never(t, 300*time.Millisecond, "a thread or a spare made ahead before the agent's start", func() bool {
		return c.Ahead() != 0 || spares() != 0
	})
	if _, err := pd.Run(func(Report) error { return nil }); err != nil {
		t.Fatal(err)
	}
	wait.For(t, 10*time.Second, "the thread and the spare made ahead once the agent started", func() bool {
		return c.Ahead() == 1 && spares() == 1
	})
}
