package fast

import "strings"

// Account is the part of an account (accounts/api.Account, account.list's) that agent
// run's login warning reads.
type Account struct {
	Provider string `json:"provider"`
	Label    string `json:"label"`
	PerToken bool   `json:"perToken"`
	LoggedIn bool   `json:"loggedIn"`
	Problem  string `json:"problem,omitempty"`
}

// LoginWarning is what `agent run` says up front when the server already knows that
// the provider's login is missing (what `orcr doctor` reports per account), so nobody
// waits on an agent that sits on its CLI's sign-in screen; the agent is spawned all the
// same (the login may live where orcr does not look, a keychain). "" when no provider
// is named, an account is logged in, the run brings its own key, or nothing is known.
// list asks the server for its accounts (ok false: it could not; no warning then).
func LoginWarning(provider, account string, env map[string]string, list func() (accounts []Account, ok bool)) string {
	if provider == "" {
		return ""
	}
	for k := range env {
		if strings.HasSuffix(k, "_API_KEY") || strings.HasSuffix(k, "_AUTH_TOKEN") || strings.HasSuffix(k, "_OAUTH_TOKEN") {
			return ""
		}
	}
	accounts, ok := list()
	if !ok {
		return ""
	}
	var first *Account
	for i, a := range accounts {
		if a.Provider != provider || account != "" && a.Label != account {
			continue
		}
		if a.LoggedIn || a.PerToken {
			return ""
		}
		if first == nil {
			first = &accounts[i]
		}
	}
	if first == nil {
		return ""
	}
	why := first.Problem
	if why == "" {
		why = "no login found; log in with: " + loginCommand(provider)
	}
	return provider + " account " + first.Label + ": " + why + " — the agent will likely stop on " + provider +
		"'s sign-in screen (blocked: setup); see orcr doctor"
}

// loginCommand is how a provider's CLI is logged in.
func loginCommand(provider string) string {
	switch provider {
	case "claude":
		return "claude /login"
	case "codex":
		return "codex login (or set OPENAI_API_KEY)"
	}
	return provider + " /login"
}
