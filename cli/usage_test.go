package cli_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
)

// ended is an agent an earlier server ran, ended ago, with tokens and a cost.
func ended(n int, path, provider, model string, ago time.Duration, in, out int64, usd float64) wire.Agent {
	at := time.Now().Add(-ago)
	code := 0
	return wire.Agent{ID: fmt.Sprintf("01a20000-0000-7000-8000-%012d", n), Path: path, Provider: provider, Model: model,
		State: wire.StateExited, ExitCode: &code, CreatedAt: at, UpdatedAt: at, StateAt: at, EndedAt: &at,
		Usage: wire.Usage{InputTokens: in, OutputTokens: out, CostUSD: &usd, Priced: true}}
}

// TestUsageOneRowPerModel: `orcr usage` prints each provider, account and model once
// (the 5h and weekly windows as columns of it, not as rows repeating the totals), no
// rows for shell agents, and --provider with a provider the server does not run is an
// error naming the ones it does.
func TestUsageOneRowPerModel(t *testing.T) {
	r := newRig(t,
		ended(1, "u/new", "claude", "sonnet", time.Hour, 20_000, 1_000, 0.50),
		ended(2, "u/old", "claude", "sonnet", 3*24*time.Hour, 10_000, 500, 0.25),
		ended(3, "u/codex", "codex", "gpt-5", time.Hour, 4_000, 100, 0.10),
		ended(4, "u/sh", "shell", "", time.Hour, 0, 0, 0))
	code, out, errOut := r.run(t, "", "usage")
	if code != 0 {
		t.Fatalf("usage: exit %d: %s", code, errOut)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("want a header and one row per provider and model, got:\n%s", out)
	}
	if f := strings.Fields(lines[0]); strings.Join(f, " ") != "PROVIDER ACCOUNT MODEL AGENTS IN OUT CACHE R/W COST 5H WEEKLY" {
		t.Errorf("header %q", lines[0])
	}
	// sonnet: both agents in total and weekly, only the new one in the last 5h.
	if f := strings.Fields(lines[1]); strings.Join(f, " ") != "claude - sonnet 2 30k 1.5k 0/0 $0.75 20k/1.0k $0.50 30k/1.5k $0.75" {
		t.Errorf("claude row %q", lines[1])
	}
	if f := strings.Fields(lines[2]); len(f) < 3 || f[0] != "codex" || f[2] != "gpt-5" {
		t.Errorf("codex row %q", lines[2])
	}
	if strings.Contains(out, "shell") || strings.Contains(out, "total") {
		t.Errorf("usage shows shell agents or a window row:\n%s", out)
	}
	code, out, errOut = r.run(t, "", "usage", "--provider", "nope")
	if code == 0 || out != "" || !strings.Contains(errOut, "orcr: --provider nope: no such provider; this server runs shell") {
		t.Errorf("usage --provider nope: exit %d, %q %q", code, out, errOut)
	}
	// Asked for by name, shell's row is shown.
	if code, out, _ = r.run(t, "", "usage", "--provider", "shell"); code != 0 || !strings.Contains(out, "shell") {
		t.Errorf("usage --provider shell: exit %d\n%s", code, out)
	}
}
