package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"orcr/testutil/clis"
	"orcr/testutil/modelserver"
)

// claudeSetup readies the rig to run the real claude CLI against a scripted model
// server playing script: a working folder, claude's unattended setup
// (clis.ScriptedClaude: onboarding done, as on a machine where claude has been used
// before) and config.toml naming the binary, followed by conf. It returns the folder,
// the server, and the flags `orcr agent run PATH` takes to start claude there against
// the server: the dashboard's engine runs in the rig's own environment, so claude's
// goes with each run.
func (r *rig) claudeSetup(t *testing.T, conf string, script ...modelserver.Turn) (string, *modelserver.Server, []string) {
	t.Helper()
	srv, err := modelserver.Start(script...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	work := filepath.Join(r.dir, "work")
	for _, d := range []string{work, filepath.Join(r.dir, "config", "orcr")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run := []string{"--provider", "claude", "--cwd", work}
	bin := ""
	for _, kv := range clis.ScriptedClaude(t, r.dir, srv.URL) {
		if v, ok := strings.CutPrefix(kv, "ORCR_CLAUDE_BIN="); ok {
			bin = v
			continue
		}
		run = append(run, "--env", kv)
	}
	conf = "[providers.claude]\nbin = \"" + bin + "\"\n" + conf
	if err := os.WriteFile(filepath.Join(r.dir, "config", "orcr", "config.toml"), []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	return work, srv, run
}
