package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/testutil/wait"
)

const badPlanBody = `request: two parts
check: test -s M1.txt

## M1 · One
depends: -
tier: small

### Goal
Write M1.txt.

### Acceptance
- [ ] M1.txt

## M2 · Two
depends: M1
tier: small

### Goal
Write M2.txt.

### Acceptance
- [ ] M2.txt
`

// badCoder ends its first turn without `run done`; asked, it reports done with its
// file not committed; told so, it commits and reports done. On "stale" it reports
// done again. What `orcr run done` prints goes to log.
func badCoder(orcr, log string) []string {
	return []string{"sh", "-c", `m=$(basename "$PWD")
while read -r line; do
  case "$line" in
    *"turn ended without"*) echo "$m" > "$m.txt"; echo "== done dirty" >> ` + log + `; ` + orcr + ` run done "$m" >> ` + log + ` 2>&1 ;;
    *"uncommitted"*) git add -A && git commit -qm "$m"; echo "== done" >> ` + log + `; ` + orcr + ` run done "$m" >> ` + log + ` 2>&1 ;;
    stale) echo "== done stale $m" >> ` + log + `; ` + orcr + ` run done "$m" >> ` + log + ` 2>&1; echo "exit $?" >> ` + log + ` ;;
  esac
done`}
}

// TestRunBadInputMessages drives the bad input of DESIGN §8 through the real CLI and
// checks what each says: `run done` outside a coder's pane, an answer for a
// milestone that is not asking, a coder's turn that ends without `run done`, a done
// with uncommitted changes, feature/NAME moved by hand during the run, a stale done
// from a coder the work was taken from, and the plan edited into a cycle.
func TestRunBadInputMessages(t *testing.T) {
	e, repo := newRepoEnv(t)
	ident := gitIdent
	seedPlansText(t, e.home, repo, badPlanBody, "bad")
	log := filepath.Join(t.TempDir(), "coder.log")
	e.serve()

	// `run done` from outside any run's pane.
	r := e.orcr("run", "done", "M1")
	if r.Code == 0 || !strings.Contains(r.Err, "works only inside a run's coder pane") {
		t.Fatalf("run done outside a pane: exit %d, %q", r.Code, r.Err)
	}

	e.must(append([]string{"run", "start", "bad", "--coders", "1", "--coder", "shell", "--lead", "none", "--"}, badCoder(e.bin, log)...)...)
	// An answer for a milestone that is not asking.
	r = e.orcr("run", "answer", "bad", "M1", "skip empty rows")
	if r.Code == 0 || !strings.Contains(r.Err, "cannot answer M1 of run bad: it is ready") || !strings.Contains(r.Err, "only a milestone whose coder asked takes an answer") {
		t.Fatalf("answer for a milestone that is not asking: exit %d, %q", r.Code, r.Err)
	}
	e.must("run", "dispatch", "bad", "M1")
	waitMilestone(t, e, "bad", "M1", "merged", 30*time.Second)
	events := e.must("run", "events", "bad")
	for _, want := range []string{"turn-ended", "uncommitted changes", "checked"} {
		if !strings.Contains(events, want) {
			t.Fatalf("events lack %q:\n%s", want, events)
		}
	}
	b, _ := os.ReadFile(log)
	if !strings.Contains(string(b), "== done dirty\nM1: fixing; coder-1") {
		t.Fatalf("a done with uncommitted changes should go back to the coder (fixing):\n%s", b)
	}

	// Someone moves feature/bad by hand while M2 is under way: M2 is held and says so.
	e.must("run", "dispatch", "bad", "M2")
	gitSh(t, repo, ident, "git update-ref refs/heads/feature/bad main")
	waitMilestone(t, e, "bad", "M2", "held", 30*time.Second)
	st := e.must("run", "status", "bad")
	if !strings.Contains(st, "someone moved it by hand") || !strings.Contains(st, "git update-ref refs/heads/feature/bad") {
		t.Fatalf("status of a run whose branch was moved by hand:\n%s", st)
	}
	if ev := e.must("run", "events", "bad"); !strings.Contains(ev, "moved") {
		t.Fatalf("no moved event:\n%s", ev)
	}

	// The held milestone's coder reports done again: stale, ignored, and it is told.
	e.must("agent", "send", "runs/bad/coder-1", "stale")
	wait.For(t, 10*time.Second, "the stale done's answer", func() bool {
		b, _ := os.ReadFile(log)
		return strings.Contains(string(b), "exit ")
	})
	b, _ = os.ReadFile(log)
	if s := string(b[strings.LastIndex(string(b), "== done stale"):]); !strings.Contains(s, "M2 of run bad is held, not with you (coder-1) any more: your done was ignored") || strings.Contains(s, "exit 0") {
		t.Fatalf("a stale done:\n%s", s)
	}

	// The plan edited into a cycle: refused, naming the line, and `run status` says so.
	file := filepath.Join(repo, ".orcr", "plans", "bad.md")
	src, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cyclic := strings.Replace(string(src), "## M1 · One\ndepends: -", "## M1 · One\ndepends: M2", 1)
	if err := os.WriteFile(file, []byte(cyclic), 0o644); err != nil {
		t.Fatal(err)
	}
	st = e.must("run", "status", "bad")
	if !strings.Contains(st, "plan edited: edit refused: "+file+":6: dependency cycle: M1 → M2 → M1") {
		t.Fatalf("status after a cyclic plan edit:\n%s", st)
	}
	if ev := e.must("run", "events", "bad"); !strings.Contains(ev, "plan-edited") {
		t.Fatalf("no plan-edited event:\n%s", ev)
	}
}

// waitMilestone waits until milestone m of run name is in state.
func waitMilestone(t *testing.T, e *env, name, m, state string, d time.Duration) {
	t.Helper()
	ok := wait.Until(d, func() bool {
		for _, l := range strings.Split(e.orcr("run", "status", name).Out, "\n") {
			if f := strings.Fields(l); len(f) > 2 && f[0] == m {
				for _, w := range f[1:] {
					if w == state {
						return true
					}
				}
			}
		}
		return false
	})
	if !ok {
		t.Fatalf("%s of %s never became %s:\n%s", m, name, state, runDump(e, name))
	}
}
