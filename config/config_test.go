package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, s string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.toml")
	if err := os.WriteFile(p, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLoad(t *testing.T) {
	c, err := Load(write(t, "host = \"tmux\"\n[limits]\nglobal = 6\nclaude = 3\nmin_free_mb = 1500\n[ui]\ntheme = \"light\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Host != "tmux" || c.GlobalCap() != 6 || c.MinFreeMB() != 1500 || c.ProviderCaps()["claude"] != 3 || c.UI.Theme != "light" {
		t.Fatalf("bad config: %+v", c)
	}
	if _, ok := c.ProviderCaps()["global"]; ok {
		t.Fatal("global leaked into provider caps")
	}
}

func TestLoadMissingIsDefault(t *testing.T) {
	c, err := Load(filepath.Join(t.TempDir(), "nope.toml"))
	if err != nil || c.Host != "" {
		t.Fatalf("missing file: %+v %v", c, err)
	}
}

// TestLoadErrorsNameTheLine: every problem the file has names its file and line, in the
// form editors link to. Before the one strict loader an unknown key was named with no line
// ("config X: unknown keys: ui.thme") and a type mismatch said "toml: line 3 (last key …)"
// in the middle of the message.
func TestLoadErrorsNameTheLine(t *testing.T) {
	for body, want := range map[string]string{
		"[ui]\ntheme = dark\n":                                 ":2: ui.theme: expected value but found \"dark\"",
		"host = \"tmux\"\n[ui]\nthme = \"dark\"\n":             `:3: unknown key "thme" in [ui] (known: theme, keymap)`,
		"[providers.claude]\nbin = \"c\"\nbinn = \"x\"\n":      `:3: unknown key "binn" in [providers.claude] (known: bin)`,
		"\n[limits]\nglobal = \"six\"\n":                       ":3: limits.global is a string; give an integer",
		"[gc]\nexited_grace = \"1m\"\nidle_after = \"soon\"\n": `:3: gc.idle_after = "soon" is not a duration`,
		"[prices.\"claude-opus-4.1\"]\ninput = -1\n":           ":2: prices.claude-opus-4.1.input = -1: give USD per million tokens",
	} {
		p := write(t, body)
		_, err := Load(p)
		if err == nil || !strings.HasPrefix(err.Error(), p+want) {
			t.Errorf("%q: got %v, want %s%s", body, err, p, want)
		}
	}
	for _, bad := range []string{"host = \"screen\"\n", "[limits]\nglobal = -1\n", "[gc]\nidle_after = \"soon\"\n", "bogus = 1\n"} {
		if _, err := Load(write(t, bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

func TestGitHubSection(t *testing.T) {
	c, err := Load(write(t, "[github]\napi_url = \"https://ghe.example.com/api/v3/\"\ntoken = \"t0k\"\n"))
	if err != nil || c.GitHub.APIURL != "https://ghe.example.com/api/v3/" || c.GitHub.Token != "t0k" {
		t.Fatalf("github: %+v %v", c.GitHub, err)
	}
	for _, bad := range []string{"[github]\napi_url = \"ghe.example.com\"\n", "[github]\napi_url = \"ftp://x/\"\n", "[github]\nurl = \"https://x/\"\n"} {
		if _, err := Load(write(t, bad)); err == nil {
			t.Errorf("accepted %q", bad)
		}
	}
}

// TOML reads nan and inf; headroom = nan reached `orcr account ls` as "json: unsupported
// value: NaN". Each number orcr cannot use is refused with its bound.
func TestBadNumbersRefused(t *testing.T) {
	for body, want := range map[string]string{
		"[accounts]\nheadroom = nan\n":     "accounts.headroom = NaN: give a fraction from 0 to 1",
		"[accounts]\nheadroom = inf\n":     "accounts.headroom = +Inf: give a fraction from 0 to 1",
		"[accounts]\nheadroom = 1.5\n":     "accounts.headroom = 1.5",
		"[accounts]\nhold_below = -1\n":    "accounts.hold_below = -1: give a percentage from 0 to 100",
		"[prices.m]\ninput = nan\n":        "prices.m.input = NaN: give USD per million tokens from 0 to 100000",
		"[server]\nmax_connections = -5\n": "server.max_connections = -5",
	} {
		_, err := Load(write(t, body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", body, err, want)
		}
	}
}

// TestNotifySection: [notify] turns kinds, the bell and the desktop notification off
// one by one (all on when unset); an unknown key or OSC is named at its line.
func TestNotifySection(t *testing.T) {
	c, err := Load(write(t, "[notify]\nbell = false\nrun_asks = false\nosc = \"777\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	k := c.Notify.Kinds()
	if On(c.Notify.Bell) || !On(c.Notify.Desktop) || k["run_asks"] || !k["blocked"] || !k["plan_drafted"] || !k["run_failed"] || c.Notify.OSC != "777" {
		t.Fatalf("notify: %+v kinds %v", c.Notify, k)
	}
	for body, want := range map[string]string{
		"[notify]\nblocked = true\nrun_fails = false\n": `:3: unknown key "run_fails" in [notify]`,
		"[notify]\nosc = \"99\"\n":                      `:2: notify.osc = "99": use "9", "777" or leave it out`,
	} {
		p := write(t, body)
		if _, err := Load(p); err == nil || !strings.HasPrefix(err.Error(), p+want) {
			t.Errorf("%q: got %v, want %s%s", body, err, p, want)
		}
	}
}

// [run] sandbox is on (default) or off; anything else is named at its line.
func TestRunSandbox(t *testing.T) {
	c, err := Load(write(t, "[run]\nsandbox = \"off\"\n"))
	if err != nil || c.Run.Sandbox != "off" {
		t.Fatalf("%+v %v", c.Run, err)
	}
	p := write(t, "\n[run]\nsandbox = \"maybe\"\n")
	if _, err := Load(p); err == nil || !strings.HasPrefix(err.Error(), p+`:3: run.sandbox = "maybe"`) {
		t.Fatalf("sandbox = maybe: %v", err)
	}
}

// [run] mcp is self, read or act; anything else is named at its line.
func TestRunMCP(t *testing.T) {
	c, err := Load(write(t, "[run]\nmcp = \"self\"\n"))
	if err != nil || c.Run.MCP != "self" {
		t.Fatalf("%+v %v", c.Run, err)
	}
	p := write(t, "[run]\nsandbox = \"on\"\nmcp = \"all\"\n")
	if _, err := Load(p); err == nil || !strings.HasPrefix(err.Error(), p+`:3: run.mcp = "all": use "self"`) {
		t.Fatalf("mcp = all: %v", err)
	}
}
