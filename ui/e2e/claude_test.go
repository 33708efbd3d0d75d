package e2e

import (
	"os"
	"path/filepath"
	"testing"

	"orcr/testutil/clis"
	"orcr/testutil/modelserver"
)

// claudeBin finds the real claude CLI that scripts/install-clis.sh installs, or skips.
func claudeBin(t *testing.T) string {
	t.Helper()
	return clis.Find(t, "claude", "ORCR_CLAUDE_BIN")
}

// claudeSetup readies the rig to run the real claude CLI against a scripted model
// server playing script: a working folder, a claude config folder with onboarding
// done (as on a machine where claude has been used before), and config.toml naming
// the binary, followed by conf. It returns the folder, the server, and the flags
// `orcr agent run PATH` takes to start claude there against the server.
func (r *rig) claudeSetup(t *testing.T, conf string, script ...modelserver.Turn) (string, *modelserver.Server, []string) {
	t.Helper()
	bin := claudeBin(t)
	work := filepath.Join(r.dir, "work")
	cfg := filepath.Join(r.dir, "claude")
	for _, d := range []string{work, cfg, filepath.Join(r.dir, "config", "orcr")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(cfg, ".claude.json"), []byte(`{"hasCompletedOnboarding":true,"theme":"dark"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	conf = "[providers.claude]\nbin = \"" + bin + "\"\n" + conf
	if err := os.WriteFile(filepath.Join(r.dir, "config", "orcr", "config.toml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, err := modelserver.Start(script...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	run := []string{"--provider", "claude", "--cwd", work,
		"--env", "CLAUDE_CONFIG_DIR=" + cfg, "--env", "ANTHROPIC_BASE_URL=" + srv.URL,
		"--env", "ANTHROPIC_AUTH_TOKEN=test-token", "--env", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
		"--env", "DISABLE_AUTOUPDATER=1"}
	return work, srv, run
}
