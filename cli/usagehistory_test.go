package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"orcr/accounts"
	acctapi "orcr/accounts/api"
	"orcr/cli"
	"orcr/core/socket"
	"orcr/core/wire"
)

// countingTransport is the real in-process transport counting the calls of each method.
type countingTransport struct {
	wire.Transport
	calls map[string]int
}

func (c *countingTransport) Call(ctx context.Context, method string, params, result any) error {
	c.calls[method]++
	return c.Transport.Call(ctx, method, params, result)
}

// TestUsageHistoryPrintsPages: `orcr usage --history` over 1,200 peaks asks for them a
// page at a time and prints one table (one header, every peak once); --json gathers
// the pages into one answer.
func TestUsageHistoryPrintsPages(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	labels := []string{"a", "b", "c", "d", "e"}
	var specs []accounts.Spec
	for _, l := range labels {
		specs = append(specs, accounts.Spec{Provider: "claude", Label: l, Env: map[string]string{"CLAUDE_CODE_OAUTH_TOKEN": "t"}})
	}
	s, err := accounts.New(accounts.Options{Accounts: specs, Now: func() time.Time { return t0 }})
	if err != nil {
		t.Fatal(err)
	}
	const perAccount = 240 // the history kept per series
	for _, l := range labels {
		for i := range perAccount {
			r := t0.Add(time.Duration(i+1) * 5 * time.Hour)
			s.Observe(wire.LimitReading{Provider: "claude", Account: l, Window: "5h", UsedPct: 50, ResetsAt: &r, ObservedAt: r.Add(-time.Hour)})
		}
	}
	ip, err := socket.NewInProcess(s.Methods())
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, int) {
		ct := &countingTransport{Transport: ip, calls: map[string]int{}}
		var out, errb bytes.Buffer
		o := cli.Options{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
			Connect: func(context.Context) (wire.Transport, error) { return ct, nil }}
		if code := cli.Run(context.Background(), append([]string{"orcr"}, args...), o); code != 0 {
			t.Fatalf("%v: exit %d %s", args, code, errb.String())
		}
		return out.String(), ct.calls[acctapi.MethodUsageHistory]
	}
	const total = 5 * perAccount
	out, calls := run("usage", "--history")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if calls < 2 || len(lines) != total+1 || strings.Count(out, "ACCOUNT") != 1 {
		t.Fatalf("%d calls, %d lines, %d headers; want pages, %d lines and one header", calls, len(lines), strings.Count(out, "ACCOUNT"), total+1)
	}
	out, calls = run("usage", "--history", "--json")
	var r acctapi.HistoryResult
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Peaks) != total || r.Next != "" || calls < 2 {
		t.Fatalf("--json: %v, %d peaks, next %q, %d calls", err, len(r.Peaks), r.Next, calls)
	}
}
