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

// A node clone of a milestone is recognised as that milestone's (a brief performed
// again after a restart finds its coder there, not a stranger).
func TestIsCloneOf(t *testing.T) {
	for _, c := range []struct {
		dir, run, m string
		want        bool
	}{
		{"/home/u/.local/state/orcr/clones/csv/M1", "csv", "M1", true},
		{"/home/u/.local/state/orcr/clones/csv/M12", "csv", "M1", false},
		{"/home/u/.local/state/orcr/clones/csv2/M1", "csv", "M1", false},
		{"/root/.local/state/orcr/worktrees/csv/M1", "csv", "M1", false},
	} {
		if got := isCloneOf(c.dir, c.run, c.m); got != c.want {
			t.Errorf("isCloneOf(%q, %q, %q) = %v", c.dir, c.run, c.m, got)
		}
	}
}
