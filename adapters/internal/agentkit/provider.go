package agentkit

import (
	"log/slog"

	"orcr/adapters/prices"
	"orcr/core"
)

// Defaults fills the options every adapter shares: the embedded price table when none
// is given, and a logger that discards when none is given.
func Defaults(table *prices.Table, log *slog.Logger) (*prices.Table, *slog.Logger) {
	if table == nil {
		table = prices.Default()
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return table, log
}

// Detect reports a provider's binary for `orcr doctor`: where it is and its version,
// or, when it is missing, where orcr looked and the install command. Adapters add
// their own notes to a found status.
func Detect(name, bin string, found bool, envVar, installHint string) core.ProviderStatus {
	st := core.ProviderStatus{Name: name, Path: bin}
	if !found {
		st.Fix = installHint
		st.Notes = []string{name + " not found (PATH, $" + envVar + ")"}
		return st
	}
	st.Found, st.Version = true, Version(bin)
	return st
}
