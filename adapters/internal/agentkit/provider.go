package agentkit

import (
	"context"
	"encoding/json"
	"fmt"
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
func Detect(ctx context.Context, name, bin string, found bool, envVar, installHint string) core.ProviderStatus {
	st := core.ProviderStatus{Name: name, Path: bin}
	if !found {
		st.Fix = installHint
		st.Notes = []string{name + " not found (PATH, $" + envVar + ")"}
		return st
	}
	st.Found, st.Version = true, Version(ctx, bin)
	return st
}

// CLI names a provider's program for what every adapter does the same way: finding
// the binary and reporting it to `orcr doctor`.
type CLI struct {
	Name        string // provider name
	EnvVar      string // the binary override, e.g. ORCR_CLAUDE_BIN
	CacheName   string // the package's directory in the pinned CLI cache
	Bin         string // the executable's name
	InstallHint string // the command that installs it
	// Notes is what doctor adds about a found binary of this version (nil: nothing).
	Notes func(version string) []string
}

// Base is embedded in each adapter's Provider: the provider's name, its binary, its
// doctor report, and the logger and price table every adapter uses.
type Base struct {
	cli      CLI
	explicit string // a configured binary path ("" to discover)
	Log      *slog.Logger
	Prices   *prices.Table
}

// NewBase fills the defaults: the embedded price table when table is nil, a logger
// that discards when log is nil. bin is a configured binary ("" to discover it).
func NewBase(cli CLI, bin string, log *slog.Logger, table *prices.Table) Base {
	table, log = Defaults(table, log)
	return Base{cli: cli, explicit: bin, Log: log, Prices: table}
}

// Name implements core.Provider.
func (b *Base) Name() string { return b.cli.Name }

// Bin returns the binary the adapter launches and whether it exists (FindBin).
func (b *Base) Bin() (string, bool) {
	return FindBin(b.explicit, b.cli.EnvVar, b.cli.CacheName, b.cli.Bin)
}

// Detect implements core.Provider: the binary and its version, with the adapter's
// notes when found, or where orcr looked and the install command when not.
func (b *Base) Detect(ctx context.Context) core.ProviderStatus {
	bin, ok := b.Bin()
	st := Detect(ctx, b.cli.Name, bin, ok, b.cli.EnvVar, b.cli.InstallHint)
	if st.Found && b.cli.Notes != nil {
		st.Notes = append(st.Notes, b.cli.Notes(st.Version)...)
	}
	return st
}

// ReportJS is the JavaScript (valid TypeScript) of a plugin's `report(event, payload)`
// for pi's extension and opencode's plugin: it runs `self hook provider EVENT` with the
// payload on stdin, one at a time in the order of the calls. Started together, two
// hook processes reach the server in either order: a quick turn's end arriving before
// its start left the agent working for good. A hook that hangs holds the next for at
// most 5 s; the program's own work never waits on a report.
func ReportJS(self, provider string) string {
	selfJSON, _ := json.Marshal(self)
	provJSON, _ := json.Marshal(provider)
	return fmt.Sprintf(`let reporting = Promise.resolve();
const report = (event, payload) => {
  const body = JSON.stringify(payload);
  reporting = reporting.then(() => new Promise((resolve) => {
    const timer = setTimeout(resolve, 5000);
    const done = () => { clearTimeout(timer); resolve(undefined); };
    try {
      const p = spawn(%s, ["hook", %s, event], { stdio: ["pipe", "ignore", "ignore"] });
      p.on("error", done);
      p.on("close", done);
      p.stdin.on("error", () => {});
      p.stdin.end(body);
    } catch { done(); }
  }));
};`, selfJSON, provJSON)
}
