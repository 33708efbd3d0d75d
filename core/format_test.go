package core

import (
	"testing"
	"time"

	"orcr/core/wire"
)

func TestHumanCount(t *testing.T) {
	for n, want := range map[int64]string{
		0: "0", 950: "950", 999: "999", 1000: "1.0k", 9_949: "9.9k", 9_950: "10k", 25_900: "26k",
		999_499: "999k", 999_500: "1.0M", 1_250_000: "1.2M", 9_949_999: "9.9M", 9_950_000: "10M",
		999_499_999: "999M", 999_500_000: "1.0G", 12_000_000_000: "12G",
	} {
		if got := HumanCount(n); got != want {
			t.Errorf("HumanCount(%d) = %q, want %q", n, got, want)
		}
		if len(HumanCount(n)) > 4 {
			t.Errorf("HumanCount(%d) = %q is wider than 4", n, HumanCount(n))
		}
	}
}

func TestFormatTokensAndCost(t *testing.T) {
	usd := func(v float64) *float64 { return &v }
	cases := []struct {
		name         string
		a            wire.Agent
		tokens, cost string
	}{
		{"priced claude", wire.Agent{Provider: "claude", Usage: wire.Usage{InputTokens: 400, CacheReadTokens: 25_000, CacheWriteTokens: 500, OutputTokens: 500, CostUSD: usd(0.0712), Priced: true}}, "26k/500", "$0.07"},
		{"unknown model", wire.Agent{Provider: "opencode", Model: "mystery", Usage: wire.Usage{InputTokens: 1200, OutputTokens: 30}}, "1.2k/30", "unpriced"},
		{"shell agent", wire.Agent{Provider: "shell"}, "-", "-"},
		{"queued claude", wire.Agent{Provider: "claude"}, "-", "-"},
		{"zero tokens, zero cost", wire.Agent{Provider: "claude", Usage: wire.Usage{CostUSD: usd(0), Priced: true}}, "-", "-"},
		{"expensive", wire.Agent{Provider: "claude", Usage: wire.Usage{InputTokens: 90_000_000, OutputTokens: 1_000_000, CostUSD: usd(412.4)}}, "90M/1.0M", "$412"},
	}
	for _, c := range cases {
		if got := FormatTokens(c.a.Usage); got != c.tokens {
			t.Errorf("%s: tokens %q, want %q", c.name, got, c.tokens)
		}
		if got := FormatCost(c.a); got != c.cost {
			t.Errorf("%s: cost %q, want %q", c.name, got, c.cost)
		}
		if got := FormatUsageCost(c.a.Usage); got != c.cost {
			t.Errorf("%s: usage cost %q, want %q", c.name, got, c.cost)
		}
		if row := TableRow(c.a, time.Now()); row[5] != c.tokens || row[6] != c.cost {
			t.Errorf("%s: table row %q", c.name, row)
		}
	}
}

func TestTotal(t *testing.T) {
	usd := func(v float64) *float64 { return &v }
	priced := TotalOf(wire.Usage{InputTokens: 1000, OutputTokens: 100, CostUSD: usd(0.1)})
	unpriced := TotalOf(wire.Usage{InputTokens: 500, OutputTokens: 50})
	shell := TotalOf(wire.Usage{})
	var sum Total
	for _, x := range []Total{priced, shell, priced} {
		sum.Add(x)
	}
	if sum.Cost() != "$0.20" || sum.Tokens() != "2.0k/200" {
		t.Fatalf("two priced and a shell agent: %s %s", sum.Tokens(), sum.Cost())
	}
	sum.Add(unpriced)
	if sum.Cost() != "$0.20+" {
		t.Fatalf("with an unpriced agent: %s", sum.Cost())
	}
	sum.Sub(priced)
	sum.Sub(priced)
	if sum.Cost() != "unpriced" || sum.Tokens() != "500/50" {
		t.Fatalf("only the unpriced agent left: %s %s", sum.Tokens(), sum.Cost())
	}
	sum.Sub(unpriced)
	if sum.Cost() != "-" || sum.Tokens() != "-" || sum != (Total{USD: sum.USD}) {
		t.Fatalf("empty again: %+v", sum)
	}
	if got := FormatUSD(0.1 + 0.2 - 0.3); got != "$0.00" {
		t.Fatalf("rounding noise: %q", got)
	}
}

func TestFailed(t *testing.T) {
	one, zero := 1, 0
	for _, c := range []struct {
		a    wire.Agent
		want bool
	}{
		{wire.Agent{State: wire.StateExited, ExitCode: &one}, true},
		{wire.Agent{State: wire.StateExited, ExitCode: &zero}, false},
		{wire.Agent{State: wire.StateExited}, false},
		{wire.Agent{State: wire.StateFailed}, true},
		{wire.Agent{State: wire.StateKilled}, false},
	} {
		if Failed(c.a) != c.want {
			t.Errorf("Failed(%s, %v) = %v", c.a.State, c.a.ExitCode, !c.want)
		}
	}
}
