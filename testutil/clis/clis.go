// Package clis finds the pinned agent CLIs (claude, codex, pi, opencode) and other
// programs the tests drive. scripts/test installs them all and exports
// ORCR_STRICT_TESTS=1, so there a missing program fails the test; elsewhere (a
// developer's `go test` without them) the test is skipped with the command that
// installs what is missing.
package clis

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Strict reports whether missing programs must fail tests (scripts/test, CI).
func Strict() bool {
	return os.Getenv("ORCR_STRICT_TESTS") == "1" || os.Getenv("CI") == "true"
}

// Find returns the CLI name: $envVar when set, else the install-clis.sh cache
// ($ORCR_CLI_CACHE, default ~/.cache/orcr/clis).
func Find(t testing.TB, name, envVar string) string {
	t.Helper()
	if v := os.Getenv(envVar); v != "" {
		return v
	}
	p := filepath.Join(cacheDir(), name, "node_modules", ".bin", name)
	if _, err := os.Stat(p); err == nil {
		return p
	}
	missing(t, fmt.Sprintf("%s CLI not installed (looked at $%s and %s); run scripts/install-clis.sh", name, envVar, p))
	return ""
}

// cacheDir is where scripts/install-clis.sh installs: $ORCR_CLI_CACHE, default
// ~/.cache/orcr/clis.
func cacheDir() string {
	if cache := os.Getenv("ORCR_CLI_CACHE"); cache != "" {
		return cache
	}
	h, _ := os.UserHomeDir()
	return filepath.Join(h, ".cache", "orcr", "clis")
}

// OpencodeConfigHome readies xdgConfigHome/opencode, the global config dir of an
// opencode run with XDG_CONFIG_HOME=xdgConfigHome, from the seed install-clis.sh
// made ($ORCR_CLI_CACHE/opencode-config): its package.json and lock copied and its
// node_modules linked. OpenCode 1.x npm-installs @opencode-ai/plugin into every
// config dir that lacks it before it loads plugins; in a fresh dir that is a registry
// download of 10-20 s per launch, which on a loaded machine pushed the first model
// request past a role's 30 s hard timeout. With the seed it finds the package and
// goes offline.
func OpencodeConfigHome(t testing.TB, xdgConfigHome string) {
	t.Helper()
	seed := filepath.Join(cacheDir(), "opencode-config")
	if _, err := os.Stat(filepath.Join(seed, "node_modules", "@opencode-ai", "plugin", "package.json")); err != nil {
		missing(t, fmt.Sprintf("opencode's plugin package not seeded at %s; run scripts/install-clis.sh", seed))
		return
	}
	dir := filepath.Join(xdgConfigHome, "opencode")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(seed, f))
		if err != nil {
			t.Fatalf("opencode config seed: %v; run scripts/install-clis.sh", err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(seed, "node_modules"), filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
}

// Program returns a program from PATH (vim, tmux), or fails/skips with how to get it.
func Program(t testing.TB, name, install string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		missing(t, fmt.Sprintf("%s not installed (%s)", name, install))
	}
	return p
}

func missing(t testing.TB, msg string) {
	t.Helper()
	if Strict() {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// NeedRoot skips a test that needs root for what it arranges (another uid, a mount),
// saying why; under scripts/test, which CI runs as root, it fails instead, so the
// suite never passes by skipping it.
func NeedRoot(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		missing(t, "needs root to "+why+" (CI runs the suite as root)")
	}
}

// ScriptedClaude readies the claude CLI to run unattended against the scripted model
// server at url (reference/agent-clis.md §7): a config dir under dir with onboarding
// done (orcr pre-accepts each workspace's trust itself), and the environment for the
// orcr server whose panes run it — the binary, that config dir, the server's URL, a
// token, no updater or side traffic. A missing CLI fails or skips the test (Find).
func ScriptedClaude(t testing.TB, dir, url string) []string {
	t.Helper()
	bin := Find(t, "claude", "ORCR_CLAUDE_BIN")
	cfg := ClaudeConfig(t, filepath.Join(dir, "claude-config"))
	return []string{"ORCR_CLAUDE_BIN=" + bin, "CLAUDE_CONFIG_DIR=" + cfg, "ANTHROPIC_BASE_URL=" + url,
		"ANTHROPIC_AUTH_TOKEN=test-token", "DISABLE_AUTOUPDATER=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
}

// ClaudeConfig makes dir a CLAUDE_CONFIG_DIR with claude's onboarding done, as on a
// machine where claude has been used before, and returns it: no login, no trust
// (orcr pre-accepts each workspace's trust itself).
func ClaudeConfig(t testing.TB, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".claude.json"), []byte(`{"hasCompletedOnboarding":true,"theme":"dark"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// StalledRegistry returns npm_config_registry=URL for the environment of a CLI that
// must not fetch packages at run time: URL is a local listener that accepts
// connections and never answers, as a slow registry looks. A test that reaches it
// waits (opencode without OpencodeConfigHome's seed stalls before its first model
// request) instead of passing by the luck of a fast network. Connections close at
// the end of the test.
func StalledRegistry(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "npm_config_registry=http://" + ln.Addr().String() + "/"
}

// Missingf skips a test whose machine lacks what it needs (Landlock, root, sshd),
// saying what; under scripts/test, which installs and runs everything as root on a
// kernel with Landlock, it fails instead, so the suite never passes by skipping.
func Missingf(t testing.TB, format string, args ...any) {
	t.Helper()
	missing(t, fmt.Sprintf(format, args...))
}
