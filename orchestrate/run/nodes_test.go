package run

import "testing"

// Only a run's coders may be placed on a node (they get clones there); its lead and
// reviewer work in this machine's repository and worktrees.
func TestStaysHere(t *testing.T) {
	s := &Service{}
	for path, want := range map[string]bool{
		"runs/csv/lead":     true,
		"runs/csv/reviewer": true,
		"runs/csv/coder-1":  false,
		"runs/csv/coder-12": false,
		"review/x":          false,
		"runs/csv":          false,
		"runs/csv/a/b":      false,
	} {
		if got := s.StaysHere(path); got != want {
			t.Errorf("StaysHere(%q) = %v, want %v", path, got, want)
		}
	}
}

// A run's mode decides for its coders: noted shared, they stay; noted again as a
// worktree run (the name reused after a discard), they may go.
func TestStaysHereFollowsTheMode(t *testing.T) {
	s := &Service{}
	s.noteMode("demo", "shared")
	if !s.StaysHere("runs/demo/coder-1") || s.StaysHere("runs/other/coder-1") {
		t.Fatal("a shared run's coders are not kept here, or another run's are")
	}
	s.noteMode("demo", "worktree")
	if s.StaysHere("runs/demo/coder-1") {
		t.Fatal("a worktree run's coder is kept here")
	}
}
