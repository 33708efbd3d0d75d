package orchestrate

import (
	"orcr/planning"
	"strings"
	"testing"
	"time"
)

// Plan names git cannot put in feature/NAME passed the name pattern and failed at `run
// start` with git's raw message; now plan.new refuses them with git's rule and a name
// that works.
func TestPlanNamesGitCannotUse(t *testing.T) {
	for name, want := range map[string]string{
		"x..y":   `plan name "x..y": git cannot use it in the branch feature/x..y: it contains ".."; pick another name, e.g. "x.y"`,
		"y.lock": `plan name "y.lock": git cannot use it in the branch feature/y.lock: a part ends with ".lock" ("y.lock"); pick another name, e.g. "y"`,
		"z.":     `plan name "z.": git cannot use it in the branch feature/z.: it ends with '.'; pick another name, e.g. "z"`,
	} {
		_, err := NewRecord(name, "a request", t.TempDir(), "claude:x", time.Now())
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v\nwant %s", name, err, want)
		}
		if _, err := planning.Parse([]byte("# Plan: "+name+"\nrequest: r\n"), planning.Options{}); err == nil || !strings.Contains(err.Error(), "git cannot use it") {
			t.Errorf("a plan titled %s: %v", name, err)
		}
	}
	if err := planning.ValidPlanName("auth.v2"); err != nil {
		t.Fatal(err)
	}
}
