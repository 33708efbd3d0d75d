package install

import (
	"orcr/testutil/clis"
	"orcr/testutil/fstree"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"

	"orcr/testutil/modelserver"
)

func tree(t *testing.T, dir string) map[string]string { return fstree.Snapshot(t, dir) }

func sameTree(t *testing.T, what string, want, got map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s differs:\nwant %.300q\ngot  %.300q", what, k, v, got[k])
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: %s is left over", what, k)
		}
	}
}

// realDirs makes each provider's config dir as the CLIs have it on a machine where
// they have run (the same files the e2e rigs hand the real CLIs), with a skill or
// prompt of the user's own beside where orcr's go.
func realDirs(t *testing.T) (root string, env map[string]string) {
	t.Helper()
	root = t.TempDir()
	url := "http://127.0.0.1:1"
	claude := filepath.Join(root, "claude")
	must(t, os.MkdirAll(filepath.Join(claude, "skills", "mine"), 0o700))
	must(t, os.WriteFile(filepath.Join(claude, "skills", "mine", "SKILL.md"), []byte("---\nname: mine\n---\nmine\n"), 0o644))
	must(t, os.WriteFile(filepath.Join(claude, ".claude.json"), []byte(`{"numStartups":4,"hasCompletedOnboarding":true,"theme":"dark","projects":{"/w":{"hasTrustDialogAccepted":true,"allowedTools":[]}},"mcpServers":{"other":{"type":"stdio","command":"x","args":[]}}}`), 0o600))
	codex := filepath.Join(root, "codex")
	must(t, modelserver.WriteCodexHome(codex, url))
	must(t, os.MkdirAll(filepath.Join(codex, "prompts"), 0o755))
	must(t, os.WriteFile(filepath.Join(codex, "prompts", "mine.md"), []byte("my prompt"), 0o644))
	xdg := filepath.Join(root, "xdg")
	if _, err := modelserver.WriteOpencodeConfig(filepath.Join(xdg, "opencode"), url); err != nil {
		t.Fatal(err)
	}
	pi := filepath.Join(root, "pi")
	must(t, modelserver.WritePiAgentDir(pi, url))
	return root, map[string]string{"CLAUDE_CONFIG_DIR": claude, "CODEX_HOME": codex, "XDG_CONFIG_HOME": xdg,
		"PI_CODING_AGENT_DIR": pi, "HOME": filepath.Join(root, "home")}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestInstallRemoveByteIdentical: for every provider, install (with --mcp where the
// CLI has MCP) writes the three skills in its format and registers orcr mcp, a second
// install changes nothing, and remove leaves the config dir byte for byte as it was.
func TestInstallRemoveByteIdentical(t *testing.T) {
	root, env := realDirs(t)
	home := t.TempDir()
	for _, name := range Names {
		t.Run(name, func(t *testing.T) {
			before := tree(t, root)
			o := Options{Provider: name, MCP: name != "pi", Bin: "/opt/orcr/bin/orcr", Home: home, Env: func(k string) string { return env[k] }}
			rep, err := Install(o)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.Changed {
				t.Fatalf("first install changed nothing: %v", rep.Lines)
			}
			dir, _ := providers[name].dir(o.Env)
			for rel, text := range providers[name].files(o.Bin) {
				b, err := os.ReadFile(filepath.Join(dir, rel))
				if err != nil || string(b) != text {
					t.Fatalf("%s: %v", rel, err)
				}
				if !strings.Contains(text, "/opt/orcr/bin/orcr plan") && !strings.Contains(text, "/opt/orcr/bin/orcr agent ls") {
					t.Fatalf("%s does not call orcr by its path:\n%s", rel, text)
				}
			}
			checkRegistered(t, name, dir)
			installed := tree(t, root)
			rep, err = Install(o)
			if err != nil || rep.Changed {
				t.Fatalf("second install: changed=%v %v %v", rep.Changed, rep.Lines, err)
			}
			sameTree(t, "second install", installed, tree(t, root))
			if _, err := Remove(o); err != nil {
				t.Fatal(err)
			}
			sameTree(t, "after remove", before, tree(t, root))
			if _, err := Remove(o); err == nil || !strings.Contains(err.Error(), "not installed") {
				t.Fatalf("remove without install: %v", err)
			}
		})
	}
}

// checkRegistered reads the provider's MCP config the way the CLI does.
func checkRegistered(t *testing.T, name, dir string) {
	t.Helper()
	switch name {
	case "claude", "opencode":
		file, key := ".claude.json", "mcpServers"
		if name == "opencode" {
			file, key = "opencode.json", "mcp"
		}
		b, _ := os.ReadFile(filepath.Join(dir, file))
		if !strings.Contains(string(b), `"orcr"`) || !strings.Contains(string(b), `"`+key+`"`) || !strings.Contains(string(b), "/opt/orcr/bin/orcr") {
			t.Fatalf("%s:\n%s", file, b)
		}
		if name == "claude" && !strings.Contains(string(b), `"other"`) {
			t.Fatalf("the user's own MCP server is gone:\n%s", b)
		}
	case "codex":
		var cfg struct {
			Model      string `toml:"model"`
			MCPServers map[string]struct {
				Command string   `toml:"command"`
				Args    []string `toml:"args"`
			} `toml:"mcp_servers"`
		}
		if _, err := toml.DecodeFile(filepath.Join(dir, "config.toml"), &cfg); err != nil {
			t.Fatal(err)
		}
		if s := cfg.MCPServers["orcr"]; s.Command != "/opt/orcr/bin/orcr" || len(s.Args) != 1 || s.Args[0] != "mcp" || cfg.Model == "" {
			t.Fatalf("codex config %+v", cfg)
		}
	}
}

// TestRemoveAfterTheCLIChangedItsConfig: the CLI rewrote its MCP config after install
// (claude rewrites .claude.json all the time): remove takes only orcr's entry out and
// keeps the rest as it is now; a skill file the user edited is kept.
func TestRemoveAfterTheCLIChangedItsConfig(t *testing.T) {
	_, env := realDirs(t)
	o := Options{Provider: "claude", MCP: true, Bin: "/x/orcr", Home: t.TempDir(), Env: func(k string) string { return env[k] }}
	if _, err := Install(o); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(env["CLAUDE_CONFIG_DIR"], ".claude.json")
	b, _ := os.ReadFile(cfg)
	must(t, os.WriteFile(cfg, []byte(strings.Replace(string(b), `"numStartups": 4`, `"numStartups": 5`, 1)), 0o600))
	edited := filepath.Join(env["CLAUDE_CONFIG_DIR"], "skills", "orcr-status", "SKILL.md")
	must(t, os.WriteFile(edited, []byte("my own version"), 0o644))
	rep, err := Remove(o)
	if err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(cfg)
	if strings.Contains(string(b), `"orcr"`) || !strings.Contains(string(b), `"numStartups": 5`) || !strings.Contains(string(b), `"other"`) {
		t.Fatalf("config after remove:\n%s", b)
	}
	if got, _ := os.ReadFile(edited); string(got) != "my own version" {
		t.Fatalf("an edited skill was removed: %q", got)
	}
	if !strings.Contains(strings.Join(rep.Lines, "\n"), "kept "+edited) {
		t.Fatalf("report %v", rep.Lines)
	}
	// Installed again on top of a config the CLI changed.
	if _, err := Install(o); err != nil {
		t.Fatal(err)
	}
}

// TestInstallRefusals: a config dir that does not exist, a provider orcr does not
// know, MCP for pi, an orcr MCP server the user registered by hand — each refused
// with what to do, nothing written.
func TestInstallRefusals(t *testing.T) {
	root, env := realDirs(t)
	get := func(k string) string { return env[k] }
	home := t.TempDir()
	cases := []struct {
		o    Options
		want string
	}{
		{Options{Provider: "claude", Env: func(k string) string {
			if k == "CLAUDE_CONFIG_DIR" {
				return filepath.Join(root, "missing")
			}
			return ""
		}}, "does not exist: run claude once"},
		{Options{Provider: "emacs", Env: get}, `unknown provider "emacs"`},
		{Options{Provider: "pi", MCP: true, Env: get}, "pi has no MCP support"},
	}
	before := tree(t, root)
	for _, c := range cases {
		c.o.Home, c.o.Bin = home, "/x/orcr"
		if _, err := Install(c.o); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.o.Provider, err, c.want)
		}
	}
	sameTree(t, "after refusals", before, tree(t, root))
	// The user's own [mcp_servers.orcr] in codex's config.
	cfg := filepath.Join(env["CODEX_HOME"], "config.toml")
	f, _ := os.OpenFile(cfg, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("\n[mcp_servers.orcr]\ncommand = \"orcr\"\n")
	f.Close()
	if _, err := Install(Options{Provider: "codex", MCP: true, Bin: "/x/orcr", Home: home, Env: get}); err == nil || !strings.Contains(err.Error(), "already") {
		t.Fatalf("codex with its own orcr server: %v", err)
	}
}

// TestInstallIntoReadOnlyDir: a config dir on a read-only mount is refused before
// anything is written (as root, modes do not stop writes: the test mounts it
// read-only in a mount namespace of its own).
func TestInstallIntoReadOnlyDir(t *testing.T) {
	_, env := realDirs(t)
	dir := env["CLAUDE_CONFIG_DIR"]
	bin, err := os.Executable() // this test binary: re-run as the installer below
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("unshare", "-m", "sh", "-c", `mount --bind "$D" "$D" && mount -o remount,bind,ro "$D" && exec "$BIN" -test.run '^TestInstallReadOnlyChild$' -test.count=1`)
	cmd.Env = append(os.Environ(), "D="+dir, "BIN="+bin, "ORCR_INSTALL_RO_DIR="+dir, "ORCR_INSTALL_RO_HOME="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil && strings.Contains(string(out), "unshare") {
		if os.Geteuid() != 0 {
			clis.Missingf(t, "needs root for a mount namespace: %s", out)
		}
		t.Fatalf("unshare: %v %s", err, out)
	}
	if err != nil || !strings.Contains(string(out), "READONLY-REFUSED") {
		t.Fatalf("%v\n%s", err, out)
	}
}

// TestInstallReadOnlyChild runs inside TestInstallIntoReadOnlyDir's mount namespace.
func TestInstallReadOnlyChild(t *testing.T) {
	dir := os.Getenv("ORCR_INSTALL_RO_DIR")
	if dir == "" {
		t.Skip("not a test of its own: TestInstallIntoReadOnlyDir runs it inside a read-only mount namespace, with ORCR_INSTALL_RO_DIR set")
	}
	_, err := Install(Options{Provider: "claude", MCP: true, Bin: "/x/orcr", Home: os.Getenv("ORCR_INSTALL_RO_HOME"),
		Env: func(k string) string {
			if k == "CLAUDE_CONFIG_DIR" {
				return dir
			}
			return ""
		}})
	if err == nil || !strings.Contains(err.Error(), "is not writable") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("install into a read-only dir: %v", err)
	}
	if _, serr := os.Stat(filepath.Join(dir, "skills", "orcr-plan")); serr == nil {
		t.Fatal("a skill was written")
	}
	t.Log("READONLY-REFUSED")
	os.Stdout.WriteString("READONLY-REFUSED\n")
}

// TestRefusedMCPWritesNothing: with --mcp, an MCP config orcr cannot register in (it
// does not parse, it is a folder, the user registered an `orcr` server of their own)
// is refused before any skill is written: the config dir is as it was.
func TestRefusedMCPWritesNothing(t *testing.T) {
	root, env := realDirs(t)
	get := func(k string) string { return env[k] }
	claudeJSON := filepath.Join(env["CLAUDE_CONFIG_DIR"], ".claude.json")
	cases := []struct {
		name, provider string
		spoil          func()
		want           string
	}{
		{"claude config not JSON", "claude", func() { must(t, os.WriteFile(claudeJSON, []byte(`{"theme":`), 0o600)) }, "not a JSON object"},
		{"claude config a folder", "claude", func() { must(t, os.Remove(claudeJSON)); must(t, os.Mkdir(claudeJSON, 0o700)) }, "is a directory"},
		{"codex's own orcr", "codex", func() {
			f, err := os.OpenFile(filepath.Join(env["CODEX_HOME"], "config.toml"), os.O_APPEND|os.O_WRONLY, 0)
			must(t, err)
			f.WriteString("\n[mcp_servers.orcr]\ncommand = \"orcr\"\n")
			f.Close()
		}, "already"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.spoil()
			before := tree(t, root)
			_, err := Install(Options{Provider: c.provider, MCP: true, Bin: "/x/orcr", Home: t.TempDir(), Env: get})
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "nothing was changed") {
				t.Fatalf("install: %v, want %q and nothing was changed", err, c.want)
			}
			sameTree(t, "after the refusal", before, tree(t, root))
		})
	}
}
