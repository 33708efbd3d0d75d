package e2e

import (
	"strings"
	"testing"

	"orcr/core/wire"
)

// A cron that matches no date and an --every that overflows were accepted and then fired in a
// tight loop (issue 11, item 2); env names agent.run refuses were accepted by schedule.add.
func TestScheduleThatCouldNeverBeDueIsRefused(t *testing.T) {
	e := newEnv(t)
	e.serve()
	r := e.orcr("schedule", "add", "never", "--cron", "0 0 31 4 *", "--", "true")
	if r.code == 0 || !strings.Contains(r.err, "never fires") {
		t.Fatalf("cron 0 0 31 4 *: exit %d\n%s%s", r.code, r.out, r.err)
	}
	rc := e.raw()
	for _, c := range []struct{ params, want string }{
		{`"everySeconds":18446744075`, "limit is 31622400"},
		{`"everySeconds":9223372036854775807`, "limit is 31622400"},
		{`"everySeconds":60,"env":{"":"x"}`, "invalid env name"},
		{`"everySeconds":60,"env":{"A=B":"x"}`, "invalid env name"},
	} {
		resp := rc.roundTrip(`{"id":"s","method":"schedule.add","params":{"name":"bad","command":["true"],"cwd":"/",` + c.params + `}}`)
		if resp.Error == nil || resp.Error.Code != wire.CodeInvalidParams || !strings.Contains(resp.Error.Message, c.want) {
			t.Errorf("%s: %+v", c.params, resp.Error)
		}
	}
	if out := e.must("schedule", "ls"); strings.Contains(out, "never") || strings.Contains(out, "bad") {
		t.Fatalf("a refused schedule was stored:\n%s", out)
	}
}
