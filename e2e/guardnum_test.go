package e2e

import (
	"strings"
	"testing"

	"orcr/core/wire"
)

// TestBadNumbersAreRefusedWithTheirBound sends each number the server used to take (and
// misuse) and checks it is refused with its bound, on the wire and through the CLI:
// hardTimeoutSeconds 36028797018963973 wrapped to 5 s, a check timeout to 2 s, a billion
// coders were accepted, a NaN budget failed to encode, `agent wait --timeout -5s` waited
// forever and `--cron '@every 0s'` ran every second.
func TestBadNumbersAreRefusedWithTheirBound(t *testing.T) {
	e := newEnv(t)
	e.serve()
	rc := e.raw()
	for line, want := range map[string]string{
		`{"id":"1","method":"agent.run","params":{"path":"h","argv":["true"],"hardTimeoutSeconds":36028797018963973}}`: "hardTimeoutSeconds is 36028797018963973, out of range: it must be 0 to 2592000",
		`{"id":"2","method":"agent.run","params":{"path":"s","argv":["true"],"softTimeoutSeconds":-1}}`:                "softTimeoutSeconds is -1, out of range: it must be 0 to 2592000",
		`{"id":"3","method":"agent.run","params":{"path":"b","argv":["true"],"budgetUsd":1e300}}`:                      "budgetUsd is 1e+300, out of range: it must be 0 to 1e+06",
		`{"id":"4","method":"agent.run","params":{"path":"m","argv":["true"],"maxTurns":-3}}`:                          "maxTurns is -3, out of range: it must be 0 to 100000",
		`{"id":"5","method":"run.start","params":{"name":"p","checkTimeoutSeconds":36028797018963970}}`:                "checkTimeoutSeconds is 36028797018963970, out of range: it must be 0 to 2592000",
		`{"id":"6","method":"run.start","params":{"name":"p","coders":1000000000}}`:                                    "coders is 1000000000, out of range: it must be 0 to 64",
		`{"id":"7","method":"budget.set","params":{"glob":"x/**","usd":-1}}`:                                           "usd is -1, out of range: it must be 0 to 1e+06",
		`{"id":"8","method":"budget.set","params":{"glob":"x/**","tokens":-1}}`:                                        "tokens is -1, out of range: it must be 0 to 1000000000000",
		`{"id":"9","method":"usage.select","params":{"provider":"claude","priority":2000000000}}`:                      "priority is 2000000000, out of range",
		`{"id":"10","method":"history.list","params":{"sinceSeconds":-5}}`:                                             "sinceSeconds is -5, out of range",
		`{"id":"11","method":"schedule.add","params":{"name":"z","cron":"@every 0s","command":["true"],"cwd":"/"}}`:    `cron "@every 0s" is shorter than the 1s minimum`,
	} {
		resp := rc.roundTrip(line)
		if resp.Error == nil || resp.Error.Code != wire.CodeInvalidParams || !strings.Contains(resp.Error.Message, want) {
			t.Errorf("%s: %+v, want %q", line, resp.Error, want)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"budget", "set", "x/**", "--usd", "NaN"}, "usd is NaN: give a finite number from 0 to 1e+06"},
		{[]string{"budget", "set", "x/**", "--usd", "+Inf"}, "usd is +Inf: give a finite number"},
		{[]string{"agent", "wait", "w", "--timeout", "-5s"}, "--timeout -5s: give a positive duration"},
		{[]string{"run", "start", "p", "--coders", "1000000000"}, "coders is 1000000000, out of range: it must be 0 to 64"},
		{[]string{"run", "start", "p", "--check-timeout", "-1m"}, "--check-timeout -1m0s: give a positive duration"},
		{[]string{"schedule", "add", "z", "--cron", "@every 0s", "--", "true"}, `cron "@every 0s" is shorter than the 1s minimum: use @every 1s or longer`},
		{[]string{"agent", "answer", "w", "--allow", "--timeout", "-1s"}, "--timeout -1s: give a positive duration"},
	} {
		r := e.orcr(c.args...)
		if r.Code == 0 || !strings.Contains(r.Err, c.want) {
			t.Errorf("orcr %s: exit %d, %q, want %q", strings.Join(c.args, " "), r.Code, r.Err, c.want)
		}
	}
	if out := e.must("schedule", "ls"); strings.Contains(out, "z") {
		t.Fatalf("a refused schedule was stored:\n%s", out)
	}
}
