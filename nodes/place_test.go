package nodes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	nodeapi "orcr/nodes/api"
)

func here(free int) spot { return spot{state: nodeapi.StateUp, freeMB: free, totalMB: -1} }

func nd(name string, agents, max, free, total int, accounts ...string) spot {
	return spot{name: name, state: nodeapi.StateUp, agents: agents, max: max, freeMB: free, totalMB: total, accounts: accounts}
}

func noLandlock(sp spot) spot {
	sp.confines = cannotConfine(&nodeapi.Landlock{Error: "test kernel"})
	return sp
}

func sandboxed(w want) want { w.sandbox = true; return w }

// Placement: this machine while it has room; else the least loaded node with room,
// the account present and free memory for min_free_mb plus the provider's RSS; else
// a reason naming every machine.
func TestChoose(t *testing.T) {
	w := want{provider: "claude", account: "work", minMB: 400, rssMB: 500}
	cases := []struct {
		name  string
		spots []spot
		w     want
		want  string
		why   []string // "" want: the reason has these
	}{
		{"here has room", []spot{here(2000), nd("big", 0, 3, 8000, 16000, "work")}, w, "", nil},
		{"here unknown memory", []spot{here(-1), nd("big", 0, 3, 8000, 16000, "work")}, w, "", nil},
		{"here full: the node", []spot{here(800), nd("big", 0, 3, 8000, 16000, "work")}, w, "big", nil},
		{"least loaded by cap share", []spot{here(100), nd("a", 2, 4, 8000, 16000, "work"), nd("b", 1, 4, 8000, 16000, "claude/work")}, w, "b", nil},
		{"a tie: fewer agents", []spot{here(100), nd("a", 2, 4, 8000, 16000, "work"), nd("b", 4, 8, 8000, 16000, "work")}, w, "a", nil},
		{"uncapped by memory share", []spot{here(100), nd("a", 9, 0, 2000, 16000, "work"), nd("b", 9, 0, 12000, 16000, "work")}, w, "b", nil},
		{"account only on one", []spot{here(100), nd("a", 0, 4, 8000, 16000, "home"), nd("b", 3, 4, 8000, 16000, "work")}, w, "b", nil},
		{"default account everywhere", []spot{here(100), nd("a", 0, 4, 8000, 16000)}, want{provider: "claude", account: "default", minMB: 400}, "a", nil},
		{"no room anywhere", []spot{here(412), nd("big", 3, 3, 8000, 16000, "work"),
			{name: "lab", state: nodeapi.StateUnreachable}, nd("mem", 0, 3, 700, 16000, "work"), nd("acct", 0, 3, 8000, 16000, "home"),
			{name: "dr", state: nodeapi.StateUp, draining: true, freeMB: 9000}}, w, "",
			[]string{"no node has claude/work with 900 MB free", "here: 412 MB free", "big: 3 of its 3 agents", "lab: unreachable",
				"mem: 700 MB free", "acct: no claude/work login", "dr: drained"}},
		{"a worktree agent stays here", []spot{here(100), nd("big", 0, 3, 8000, 16000, "work")}, want{provider: "claude", account: "work", minMB: 400, here: true}, "",
			[]string{"big: it works in a repository of this machine", "here: 100 MB free"}},
		{"here at its [limits] local cap: the node", []spot{{state: nodeapi.StateUp, freeMB: 9000, totalMB: -1, agents: 1, max: 1}, nd("big", 0, 1, 8000, 16000, "work")}, w, "big", nil},
		{"here under its local cap", []spot{{state: nodeapi.StateUp, freeMB: 9000, totalMB: -1, agents: 1, max: 2}, nd("big", 0, 1, 8000, 16000, "work")}, w, "", nil},
		{"every machine at its cap", []spot{{state: nodeapi.StateUp, freeMB: 9000, totalMB: -1, agents: 1, max: 1}, nd("big", 1, 1, 8000, 16000, "work")}, w, "",
			[]string{"here: 1 of its 1 agents ([limits] local)", "big: 1 of its 1 agents"}},
		{"no memory need", []spot{here(0), nd("big", 3, 3, 100, 16000)}, want{provider: "shell"}, "", nil},
		{"a sandboxed agent skips the node without Landlock", []spot{here(100), noLandlock(nd("a", 0, 4, 8000, 16000, "work")), nd("b", 3, 4, 8000, 16000, "work")},
			sandboxed(w), "b", nil},
		{"an agent without a sandbox still goes there", []spot{here(100), noLandlock(nd("a", 0, 4, 8000, 16000, "work")), nd("b", 3, 4, 8000, 16000, "work")},
			w, "a", nil},
		{"here without Landlock: a sandboxed agent to the node", []spot{noLandlock(here(9000)), nd("big", 0, 3, 8000, 16000, "work")}, sandboxed(w), "big", nil},
		{"here without Landlock keeps an agent without a sandbox", []spot{noLandlock(here(9000)), nd("big", 0, 3, 8000, 16000, "work")}, w, "", nil},
		{"no machine confines", []spot{noLandlock(here(9000)), noLandlock(nd("big", 0, 3, 8000, 16000, "work"))}, sandboxed(w), "",
			[]string{"here: no Landlock to confine a sandbox (test kernel)", "big: no Landlock to confine a sandbox (test kernel)"}},
		{"a node that does not say", []spot{here(100), func() spot { sp := nd("old", 0, 3, 8000, 16000, "work"); sp.confines = cannotConfine(nil); return sp }()},
			sandboxed(w), "", []string{"old: its orcr does not say whether it has Landlock"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok, why := choose(c.spots, c.w)
			if c.why != nil {
				if ok {
					t.Fatalf("placed on %q; want none", got)
				}
				for _, s := range c.why {
					if !strings.Contains(why, s) {
						t.Fatalf("why %q lacks %q", why, s)
					}
				}
				return
			}
			if !ok || got != c.want {
				t.Fatalf("placed on %q (%v, %s); want %q", got, ok, why, c.want)
			}
		})
	}
}

// The RSS of a process tree: the root's and every descendant's, not its parent's.
func TestTreeRSS(t *testing.T) {
	proc := t.TempDir()
	page := os.Getpagesize() / 1024
	stat := func(pid, ppid, pages string) {
		os.MkdirAll(filepath.Join(proc, pid), 0o755)
		rest := []string{"S", ppid}
		for i := 2; i < 21; i++ {
			rest = append(rest, "0")
		}
		rest = append(rest, pages, "0", "0")
		os.WriteFile(filepath.Join(proc, pid, "stat"), []byte(pid+" (a (b) c) "+strings.Join(rest, " ")+"\n"), 0o644)
	}
	stat("1", "0", "1000")
	stat("10", "1", "100") // root
	stat("11", "10", "50")
	stat("12", "11", "25")
	stat("20", "1", "7") // another root
	stat("30", "1", "999")
	got := treeRSS(proc, []int{10, 20, 99})
	if got[10] != 175*page || got[20] != 7*page || len(got) != 2 {
		t.Fatalf("tree rss %v (page %d kB)", got, page)
	}
	// This process's own tree is measured for real.
	if real := treeRSS("/proc", []int{os.Getpid()}); real[os.Getpid()] <= 0 {
		t.Fatalf("own rss %v", real)
	}
}

func FuzzParseStat(f *testing.F) {
	f.Add([]byte("1 (init) S 0 1 1 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 9 1000 300 18446744073709551615"))
	f.Add([]byte("5 (a) b)) R 1"))
	f.Add([]byte(")"))
	f.Fuzz(func(t *testing.T, b []byte) {
		ppid, pages, ok := parseStat(b)
		if ok && pages < 0 {
			t.Fatalf("negative pages %d (ppid %d)", pages, ppid)
		}
	})
}

// A role's labels go to the least loaded node carrying every label and not drained;
// none carrying them is an error naming the labels.
func TestNodeWithLabels(t *testing.T) {
	s := &Service{nodes: map[string]*node{
		"a": {spec: nodeapi.Node{Name: "a", Labels: []string{"gpu"}}},
		"b": {spec: nodeapi.Node{Name: "b", Labels: []string{"gpu", "fast"}}},
		"c": {spec: nodeapi.Node{Name: "c", Labels: []string{"gpu", "fast"}, Draining: true}},
	}, onNode: map[string]string{}, reserved: map[string][]reservation{}}
	if n, err := s.NodeWithLabels([]string{"fast", "gpu"}); err != nil || n != "b" {
		t.Fatalf("gpu+fast: %q %v", n, err)
	}
	if n, err := s.NodeWithLabels([]string{"gpu"}); err != nil || n != "a" {
		t.Fatalf("gpu: %q %v", n, err)
	}
	if _, err := s.NodeWithLabels([]string{"tpu"}); err == nil || !strings.Contains(err.Error(), "no node is labelled tpu") {
		t.Fatalf("tpu: %v", err)
	}
}

// A machine confines a sandboxed agent when its server says an ABI of at least 1.
func TestCannotConfine(t *testing.T) {
	for _, c := range []struct {
		l    *nodeapi.Landlock
		want string
	}{
		{&nodeapi.Landlock{ABI: 1}, ""},
		{&nodeapi.Landlock{ABI: 7}, ""},
		{&nodeapi.Landlock{Error: "switched off"}, "no Landlock to confine a sandbox (switched off)"},
		{&nodeapi.Landlock{}, "no Landlock to confine a sandbox"},
		{nil, "its orcr does not say whether it has Landlock"},
	} {
		if got := cannotConfine(c.l); !strings.HasPrefix(got, c.want) || (c.want == "") != (got == "") {
			t.Errorf("%+v: %q; want %q", c.l, got, c.want)
		}
	}
}
