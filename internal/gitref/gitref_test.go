package gitref

import (
	"os/exec"
	"testing"
)

// checkGit is the real `git check-ref-format --branch`, run outside any repository so
// "@{-1}" cannot name a previous branch.
func checkGit(t testing.TB, dir, name string) bool {
	cmd := exec.Command("git", "check-ref-format", "--branch", name)
	cmd.Dir = dir
	return cmd.Run() == nil
}

func TestCheckBranchAgreesWithGit(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is needed: the checker is held to the real one")
	}
	dir := t.TempDir()
	for _, n := range []string{"feature/x", "x..y", "y.lock", "z.", "a./b", "a/.b", "a.lock/b", "é", "a b", "", "a//b",
		"/a", "a/", "-x", "x@{y", "@x", "a@b", "HEAD/x", "feature/x.y", "tab\tx", "del\x7f", "q?", "s*", "b[", "c\\d",
		"t~1", "c^", "k:v", ".hidden", "a/b.lock", "ok-name_1.2"} {
		ours := CheckBranch(n) == nil
		if git := checkGit(t, dir, n); ours != git {
			t.Errorf("%q: ours %v (%v), git %v", n, ours, CheckBranch(n), git)
		}
	}
	for _, n := range []string{"HEAD", "@"} {
		if CheckBranch(n) == nil {
			t.Errorf("%q accepted", n)
		}
	}
	for _, n := range []string{"x..y", "y.lock", "z.", "a b", "-x", "a//b/", ".x"} {
		if s := Suggest(n); CheckBranch(s) != nil {
			t.Errorf("Suggest(%q) = %q, which git refuses: %v", n, s, CheckBranch(s))
		}
	}
}

// FuzzCheckBranch holds the checker to git on arbitrary names: it never accepts what git
// refuses, and refuses what git accepts only for "@" alone.
func FuzzCheckBranch(f *testing.F) {
	for _, s := range []string{"feature/x", "x..y", "y.lock", "z.", "a/.b", "@{", "a//b", "-x", "é/ü", "@"} {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, name string) {
		if len(name) > 200 {
			return
		}
		for i := 0; i < len(name); i++ {
			if name[i] == 0 {
				return // an argv cannot carry NUL
			}
		}
		ours := CheckBranch(name) == nil
		git := checkGit(t, dir, name)
		if ours != git && !(git && (name == "@")) {
			t.Fatalf("%q: ours %v (%v), git %v", name, ours, CheckBranch(name), git)
		}
	})
}
