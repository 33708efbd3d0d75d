package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"orcr/testutil/testbin"
)

// TestDoctorAndServeAgreeOnTheHost: `orcr doctor` names the host `orcr serve` then
// uses, with the same reason, or, when serve refuses to start, the reason it refuses
// with. Both take the choice from the daemon's one host discovery (DESIGN §6).
func TestDoctorAndServeAgreeOnTheHost(t *testing.T) {
	tmuxPath, err := exec.LookPath("tmux")
	if err != nil {
		t.Fatalf("tmux is required: %v (apt-get install tmux)", err)
	}
	for _, c := range []struct {
		name   string
		config string   // config.toml
		env    []string // on top of an env in auto mode
		host   string   // the host both must name; "" when serve must refuse
		refuse string   // what the refusal must say
	}{
		{name: "auto without herdr or tmux", env: []string{"PATH=" + binDirOnly(t)}, host: "pty"},
		{name: "auto with tmux", host: "tmux"},
		// The case where doctor used to say tmux while serve fell back to pty.
		{name: "auto with a tmux that does not run", config: "[tmux]\nbin = \"/bin/false\"\n", host: "pty"},
		{name: "bad ORCR_HERDR_BIN", env: []string{"ORCR_HERDR_BIN=/nonexistent/herdr"}, refuse: "$ORCR_HERDR_BIN"},
		{name: "bad config herdr.bin", config: "[herdr]\nbin = \"/nonexistent/herdr\"\n", refuse: "config herdr.bin"},
		{name: "bad herdr.bin does not matter to an explicit tmux", config: "[herdr]\nbin = \"/nonexistent/herdr\"\n",
			env: []string{"ORCR_HOST=tmux"}, host: "tmux"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t, append([]string{"ORCR_HOST=", "TMUX_TMPDIR=" + t.TempDir(), noCLIs(t), plainShell}, c.env...)...)
			t.Cleanup(func() { exec.Command(tmuxPath, "-S", filepath.Join(e.home, "tmux.sock"), "kill-server").Run() })
			if c.config != "" {
				writeConfig(t, e, c.config)
			}
			var doc struct {
				Host, HostWhy, HostError string
			}
			if err := json.Unmarshal([]byte(e.must("doctor", "--json")), &doc); err != nil {
				t.Fatal(err)
			}
			if c.host == "" {
				if doc.Host != "" || !strings.Contains(doc.HostError, c.refuse) {
					t.Fatalf("doctor: host %q, error %q; want a refusal naming %s", doc.Host, doc.HostError, c.refuse)
				}
				r := e.orcr("serve")
				if r.Code != 2 || !strings.Contains(r.Err, doc.HostError) {
					t.Fatalf("serve: exit %d %q; want exit 2 with doctor's %q", r.Code, r.Err, doc.HostError)
				}
				return
			}
			if doc.Host != c.host || doc.HostError != "" {
				t.Fatalf("doctor: host %q (%s), error %q; want %s", doc.Host, doc.HostWhy, doc.HostError, c.host)
			}
			e.serve()
			info, err := e.client().Info(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if info.Host != doc.Host || info.HostWhy != doc.HostWhy {
				t.Fatalf("serve uses %s (%s); doctor said %s (%s)", info.Host, info.HostWhy, doc.Host, doc.HostWhy)
			}
		})
	}
}

// noCLIs is the environment entry of an empty agent CLI cache, for a test that calls
// `orcr doctor` for something else than the providers: doctor starts every CLI it
// finds for its version (opencode alone is 6 s of CPU; a doctor call took 10-20 s
// under load).
func noCLIs(t *testing.T) string { return "ORCR_CLI_CACHE=" + t.TempDir() }

// plainShell is the environment entry of a test that calls `orcr doctor` for
// something else than the user's shell: doctor asks $SHELL as a login shell whether
// it finds orcr (TestDoctorSaysWhetherTheShellFindsOrcr), and e2e's env keeps the
// test user's HOME, whose login setup is not the installation under test. On the
// shared machine root's `bash -l` hangs a minute on a stale pyenv lock, so each such
// doctor call waited out the probe's 5 s: TestDoctorAndServeAgreeOnTheHost's six
// cases took 31.6 s at a load of 20.
const plainShell = "SHELL=/bin/sh"

// binDirOnly is a PATH holding only the orcr binary: no herdr, no tmux.
func binDirOnly(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(testbin.Build(t, "orcr"), filepath.Join(dir, "orcr")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func writeConfig(t *testing.T, e *env, text string) {
	t.Helper()
	var dir string
	for _, kv := range e.vars {
		if v, ok := strings.CutPrefix(kv, "XDG_CONFIG_HOME="); ok {
			dir = v
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "orcr"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "orcr", "config.toml"), []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}
