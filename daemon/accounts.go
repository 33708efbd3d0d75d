package daemon

import (
	"fmt"
	"log/slog"
	"time"

	"orcr/accounts"
	"orcr/config"
)

// configAccounts turns config [accounts] into the accounts service's options.
func configAccounts(cfg config.Config, log *slog.Logger) (accounts.Options, error) {
	a := cfg.Accounts
	set := accounts.Settings{Policy: accounts.Policy{Mode: a.Mode, Headroom: accounts.DefaultHeadroom, HoldBelow: accounts.DefaultHoldBelow}}
	if a.Headroom != nil {
		set.Headroom = *a.Headroom
	}
	if a.HoldBelow != nil {
		set.HoldBelow = *a.HoldBelow
	}
	for _, d := range []struct {
		name string
		s    string
		to   *time.Duration
	}{{"resume_stagger", a.ResumeStagger, &set.ResumeStagger}, {"poll", a.Poll, &set.Poll}, {"budget_grace", a.BudgetGrace, &set.BudgetGrace}} {
		if d.s == "" {
			continue
		}
		v, err := time.ParseDuration(d.s)
		if err != nil || v < 0 {
			return accounts.Options{}, fmt.Errorf("config %s: accounts.%s = %q is not a duration (e.g. \"20s\")", cfg.Path, d.name, d.s)
		}
		*d.to = v
	}
	var specs []accounts.Spec
	for prov, list := range map[string][]config.Account{"claude": a.Claude, "codex": a.Codex} {
		for _, x := range list {
			specs = append(specs, accounts.Spec{Provider: prov, Label: x.Label, ConfigDir: x.ConfigDir, Home: x.Home, Env: x.Env, UsageURL: x.UsageURL})
		}
	}
	// Config order within a provider matters (ordered mode); map order across providers does not.
	sortSpecs(specs)
	return accounts.Options{Logger: log, Settings: set, Accounts: specs}, nil
}

func sortSpecs(specs []accounts.Spec) {
	for i := 1; i < len(specs); i++ {
		for j := i; j > 0 && specs[j-1].Provider > specs[j].Provider; j-- {
			specs[j-1], specs[j] = specs[j], specs[j-1]
		}
	}
}
