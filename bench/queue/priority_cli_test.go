package queue

import (
	"strings"
	"testing"
	"time"

	"orcr/testutil/wait"
)

// TestCLIQueuePriorityAndRename drives `orcr queue priority` and `orcr agent rename`
// through the real binary: two agents wait behind a global cap of one, the second is
// raised to the front, a running agent is refused, and an agent moves to a new path
// (refused onto a path a live agent holds).
func TestCLIQueuePriorityAndRename(t *testing.T) {
	s := newServer(t, "[limits]\nglobal = 1\n")
	s.start()
	if out, err := s.run("agent", "run", "q/blocker", "--", "sh", "-c", "exec cat"); err != nil {
		t.Fatalf("agent run: %v %s", err, out)
	}
	// The blocker holds the one slot before the others queue behind it.
	var got string
	if !wait.Until(30*time.Second, func() bool {
		got, _ = s.run("agent", "get", "q/blocker", "--json")
		return strings.Contains(got, `"state"`) && !strings.Contains(got, `"state": "queued"`) && !strings.Contains(got, `"state":"queued"`)
	}) {
		t.Fatalf("q/blocker never admitted: %s", got)
	}
	for _, c := range []struct {
		args    []string
		ok      bool
		contain string
	}{
		{[]string{"agent", "run", "q/first", "--", "sh", "-c", "exec cat"}, true, "q/first"},
		{[]string{"agent", "run", "q/second", "--", "sh", "-c", "exec cat"}, true, "q/second"},
		{[]string{"queue", "priority", "q/second", "--by", "2"}, true, "q/second: priority 2, queue position 1"},
		{[]string{"queue", "priority", "q/second", "--to", "-1"}, true, "q/second: priority -1, queue position 2"},
		{[]string{"queue", "priority", "q/second"}, false, "give --to N (set the priority) or --by N (change it)"},
		{[]string{"queue", "priority", "q/blocker", "--by", "1"}, false, "not queued"},
		{[]string{"agent", "rename", "q/first", "q/blocker"}, false, "q/blocker is already"},
		{[]string{"agent", "rename", "q/first", "q/renamed"}, true, "q/renamed queued (renamed from q/first)"},
		{[]string{"agent", "get", "q/renamed"}, true, "q/renamed"},
		{[]string{"agent", "rename", "q/first"}, false, "usage: orcr agent rename TARGET NEWPATH"},
	} {
		out, err := s.run(c.args...)
		if (err == nil) != c.ok || !strings.Contains(out, c.contain) {
			t.Errorf("orcr %s: err %v, output %q; want ok=%v and %q", strings.Join(c.args, " "), err, out, c.ok, c.contain)
		}
	}
}
