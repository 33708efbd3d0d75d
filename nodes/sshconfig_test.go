package nodes

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeSSHConfig(t *testing.T, files map[string]string) (string, string) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "config"), dir
}

func TestSSHConfigAliasGivesHostNameUserPortIdentity(t *testing.T) {
	path, dir := writeSSHConfig(t, map[string]string{
		"config": `# a comment
Include conf.d/*.conf
Host lab lab2
    HostName 198.18.0.9
    User   alice
    Port=2222
    IdentityFile ~/.ssh/lab_key
Host *.internal !bad.internal
    User bob
Host *
    User nobody
    IdentityFile "/keys/with space"
Match host foo
    User never
`,
		"conf.d/a.conf": "Host inc\n  HostName 198.18.0.10\n",
	})
	cfg, err := parseSSHConfig(path, dir)
	if err != nil {
		t.Fatal(err)
	}
	home, _ := os.UserHomeDir()
	tg, err := resolveTarget("lab", "", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if tg.Addr != "198.18.0.9" || tg.User != "alice" || tg.Port != 2222 || tg.Alias != "lab" {
		t.Fatalf("lab resolved to %+v", tg)
	}
	if len(tg.Identities) != 2 || tg.Identities[0] != filepath.Join(home, ".ssh/lab_key") || tg.Identities[1] != "/keys/with space" {
		t.Fatalf("identities %q", tg.Identities)
	}
	// The user and port given win over the config's.
	tg, _ = resolveTarget("carol@lab2:22", "/k", cfg)
	if tg.User != "carol" || tg.Port != 22 || tg.Addr != "198.18.0.9" || tg.Identities[0] != "/k" {
		t.Fatalf("carol@lab2:22 resolved to %+v", tg)
	}
	tg, _ = resolveTarget("x.internal", "", cfg)
	if tg.User != "bob" || tg.Addr != "x.internal" {
		t.Fatalf("x.internal resolved to %+v", tg)
	}
	tg, _ = resolveTarget("bad.internal", "", cfg)
	if tg.User != "nobody" {
		t.Fatalf("a negated pattern applied: %+v", tg)
	}
	tg, _ = resolveTarget("inc", "", cfg)
	if tg.Addr != "198.18.0.10" {
		t.Fatalf("Include not read: %+v", tg)
	}
	tg, _ = resolveTarget("foo", "", cfg)
	if tg.User != "nobody" {
		t.Fatalf("a Match block applied: %+v", tg)
	}
	tg, _ = resolveTarget("[::1]:2200", "", cfg)
	if tg.Addr != "::1" || tg.Port != 2200 || tg.hostport() != "[::1]:2200" {
		t.Fatalf("[::1]:2200 resolved to %+v", tg)
	}
}

func TestSSHConfigRefusesWhatItCannotFollow(t *testing.T) {
	for _, c := range []struct{ config, spec, want string }{
		{"Host j\n ProxyJump bastion\n", "j", "config:2: ProxyJump bastion"},
		{"Host j\n ProxyCommand nc %h %p\n", "j", "config:2: ProxyCommand"},
		{"Host j\n Port ssh\n", "j", `config:2: Port "ssh"`},
		{"", "a@b:99999", "port \"99999\""},
		{"", "@b", "user before @ is empty"},
		{"", "-oProxyCommand=x", "use user@host"},
		{"", "", "empty"},
		{"", "u@[::1", "unclosed ["},
	} {
		path, dir := writeSSHConfig(t, map[string]string{"config": c.config})
		cfg, err := parseSSHConfig(path, dir)
		if err != nil {
			t.Fatal(err)
		}
		_, err = resolveTarget(c.spec, "", cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q with %q: %v, want %q", c.spec, c.config, err, c.want)
		}
	}
	for _, c := range []struct{ config, want string }{
		{"Host a\n  HostName\n", "config:2: HostName needs a value"},
		{"Host a\n  IdentityFile \"/x\n", "config:2: IdentityFile: unterminated quote"},
		{"Include config\n", "Include nested deeper than 16"},
	} {
		path, dir := writeSSHConfig(t, map[string]string{"config": c.config})
		_, err := parseSSHConfig(path, dir)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("config %q: %v, want %q", c.config, err, c.want)
		}
	}
}

func TestWildMatch(t *testing.T) {
	for _, c := range []struct {
		p, s string
		ok   bool
	}{
		{"*", "anything", true}, {"a*c", "abbbc", true}, {"a*c", "abbbd", false}, {"?b", "ab", true},
		{"*.example.com", "x.EXAMPLE.com", true}, {"a*b*c", "aXbYc", true}, {"a*b*c", "aXcYb", false}, {"", "", true},
	} {
		if got := wildMatch(c.p, c.s); got != c.ok {
			t.Errorf("wildMatch(%q, %q) = %v", c.p, c.s, got)
		}
	}
}

func FuzzSSHConfig(f *testing.F) {
	f.Add("Host a b\n HostName x\n User=u\n Port 22\n IdentityFile \"/k k\"\n", "u@a:22")
	f.Add("Match all\n User x\nHost !a *\n", "a")
	f.Fuzz(func(t *testing.T, text, spec string) {
		c := &sshConfig{}
		if _, _, err := c.parse(text, "config", "/nonexistent", maxIncludeDepth, nil, false); err != nil {
			return
		}
		tg, err := resolveTarget(spec, "", c)
		if err != nil {
			return
		}
		if tg.Addr == "" || tg.Port < 1 || tg.Port > 65535 {
			t.Fatalf("%q resolved to %+v", spec, tg)
		}
	})
}
