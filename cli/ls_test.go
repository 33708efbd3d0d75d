package cli_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/testutil/wait"
)

// rowsOf is the table `orcr agent ls` printed, as each row's fields keyed by path.
func rowsOf(out string) (header string, rows map[string]string) {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	rows = map[string]string{}
	for _, l := range lines[1:] {
		if f := strings.Fields(l); len(f) > 0 {
			rows[f[0]] = l
		}
	}
	return lines[0], rows
}

// TestAgentLsStateAndWaitsOn: `agent ls --state blocked,working` lists only agents in
// those states (the groups ended, live and needs-me too), and the WAITS-ON column says
// what a blocked agent waits for.
func TestAgentLsStateAndWaitsOn(t *testing.T) {
	r := newRig(t)
	for _, a := range [][]string{
		{"ls/ask", "--", "sh", "-c", "printf 'Proceed with the deploy? [y/N] '; read x; sleep 300"},
		{"ls/busy", "--", "sh", "-c", "while :; do echo tick; sleep 0.2; done"},
		{"ls/gone", "--", "sh", "-c", "exit 4"},
	} {
		if code, _, errOut := r.run(t, "", append([]string{"agent", "run"}, a...)...); code != 0 {
			t.Fatalf("agent run %s: exit %d: %s", a[0], code, errOut)
		}
	}
	var out string
	wait.For(t, 30*time.Second, "ls/ask blocked and ls/gone exited", func() bool {
		_, out, _ = r.run(t, "", "agent", "ls")
		_, rows := rowsOf(out)
		return strings.Contains(rows["ls/ask"], " blocked ") && strings.Contains(rows["ls/gone"], "exited")
	})
	header, rows := rowsOf(out)
	if !strings.HasSuffix(header, "WAITS-ON") {
		t.Fatalf("header %q has no WAITS-ON column at its end", header)
	}
	if !strings.HasSuffix(rows["ls/ask"], "question: Proceed with the deploy? [y/N]") {
		t.Errorf("blocked row %q does not say what it waits on", rows["ls/ask"])
	}
	if !strings.HasSuffix(rows["ls/gone"], " -") {
		t.Errorf("an ended agent waits on nothing: %q", rows["ls/gone"])
	}
	// The column starts at the same place on every row.
	col := strings.Index(header, "WAITS-ON")
	if got := strings.Index(rows["ls/ask"], "question:"); got != col {
		t.Errorf("WAITS-ON at column %d in the header, %d in the row:\n%s", col, got, out)
	}

	only := func(args ...string) map[string]string {
		t.Helper()
		code, out, errOut := r.run(t, "", append([]string{"agent", "ls"}, args...)...)
		if code != 0 {
			t.Fatalf("agent ls %v: exit %d: %s", args, code, errOut)
		}
		_, rows := rowsOf(out)
		return rows
	}
	keys := func(m map[string]string) string {
		var ks []string
		for _, k := range []string{"ls/ask", "ls/busy", "ls/gone"} {
			if _, ok := m[k]; ok {
				ks = append(ks, k)
			}
		}
		return strings.Join(ks, " ")
	}
	for args, want := range map[string]string{
		"--state blocked,working":         "ls/ask ls/busy",
		"--state blocked --state working": "ls/ask ls/busy",
		"--state needs-me":                "ls/ask",
		"--state ended":                   "ls/gone",
		"--state live":                    "ls/ask ls/busy",
		"--state exited ls/**":            "ls/gone",
		"--state working other/**":        "",
	} {
		if got := keys(only(strings.Fields(args)...)); got != want {
			t.Errorf("agent ls %s: %q, want %q", args, got, want)
		}
	}
	if code, out, errOut := r.run(t, "", "agent", "ls", "--state", "blokced"); code == 0 || !strings.Contains(errOut, "--state blokced: not a state; use queued,") || out != "" {
		t.Errorf("a wrong state: exit %d, %q %q", code, out, errOut)
	}
	// Over the socket too, a state that does not exist is refused, not an empty list.
	if _, err := wire.Call(context.Background(), r.svc, wire.AgentList, wire.ListParams{States: []wire.State{"nope"}}); wire.CodeOf(err) != wire.CodeInvalidParams {
		t.Errorf("agent.list states [nope]: %v, want %s", err, wire.CodeInvalidParams)
	}
	if code, out, _ := r.run(t, "", "agent", "ls", "--state", "blocked", "--json"); code != 0 || strings.Contains(out, "ls/busy") || !strings.Contains(out, "ls/ask") {
		t.Errorf("--json --state blocked: exit %d\n%s", code, out)
	}
}
