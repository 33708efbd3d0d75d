package queue

import (
	"strings"
	"testing"
)

// TestCLIQueueCapsGCSchedule drives the commands of this area through the real binary.
func TestCLIQueueCapsGCSchedule(t *testing.T) {
	s := newServer(t, "[limits]\nglobal = 2\n")
	s.start()
	for _, c := range []struct {
		args    []string
		ok      bool
		contain string
	}{
		{[]string{"queue", "caps", "--global", "4", "--provider", "shell=2"}, true, "running 0 / 4 (global)"},
		{[]string{"queue", "caps", "--provider", "claud=1"}, false, `cap for unknown provider "claud"`},
		{[]string{"queue", "caps", "--global", "-3"}, false, "out of range: it must be 0 to"},
		{[]string{"queue", "caps"}, false, "nothing to change"},
		{[]string{"gc", "--dry-run"}, true, "rules: exited_grace 10m0s, idle_after 8h0m0s, retain 168h0m0s"},
		{[]string{"schedule", "add", "bad", "--cron", "0 3 * 13 *", "--", "true"}, false, `month field "13"`},
		{[]string{"schedule", "add", "poll", "--every", "1h", "--missed", "run-once", "--", "sh", "-c", "echo polled"}, true, "schedule poll: every 1h0m0s"},
		{[]string{"schedule", "add", "poll", "--every", "1h", "--", "true"}, false, "exists already"},
		{[]string{"schedule", "ls"}, true, "run-once"},
		{[]string{"schedule", "run", "poll"}, true, "polled"},
		{[]string{"schedule", "runs", "poll"}, true, "manual"},
		{[]string{"schedule", "rm", "poll"}, true, "removed schedule poll"},
		{[]string{"schedule", "ls"}, true, "no schedules"},
	} {
		out, err := s.run(c.args...)
		if (err == nil) != c.ok || !strings.Contains(out, c.contain) {
			t.Errorf("orcr %s: err %v, output %q; want ok=%v and %q", strings.Join(c.args, " "), err, out, c.ok, c.contain)
		}
	}
}
