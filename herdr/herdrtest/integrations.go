package herdrtest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// integrationTargets are the targets herdr can install (reference §2.12).
var integrationTargets = []string{"pi", "omp", "claude", "codex", "copilot", "devin", "droid", "kimi",
	"opencode", "kilo", "hermes", "qodercli", "cursor", "mastracode", "antigravity_cli", "grok"}

type targetParams struct {
	Target    string      `json:"target"`
	Text      string      `json:"text"`
	Keys      []string    `json:"keys"`
	Until     []string    `json:"until"`
	TimeoutMS *int64      `json:"timeout_ms"`
	Wait      *promptWait `json:"wait"`
}

type promptWait struct {
	Until     []string `json:"until"`
	TimeoutMS *int64   `json:"timeout_ms"`
}

func (s *Server) integrationInstall(_ context.Context, raw json.RawMessage) (any, error) {
	p := decode[targetParams](raw)
	if !slices.Contains(integrationTargets, p.Target) {
		return nil, errf("invalid_params", "unknown integration target %q", p.Target)
	}
	if s.opts.IntegrationDir == "" {
		return nil, errf("integration_install_failed", "%s config directory not found", p.Target)
	}
	if err := RecordIntegration(s.opts.IntegrationDir, p.Target); err != nil {
		return nil, errf("integration_install_failed", "%v", err)
	}
	return map[string]any{"type": "integration_install", "target": p.Target,
		"details": map[string]any{"messages": []string{"installed " + p.Target + " integration"}}}, nil
}

func (s *Server) integrationUninstall(_ context.Context, raw json.RawMessage) (any, error) {
	p := decode[targetParams](raw)
	if !slices.Contains(integrationTargets, p.Target) {
		return nil, errf("invalid_params", "unknown integration target %q", p.Target)
	}
	if s.opts.IntegrationDir != "" {
		_ = os.Remove(filepath.Join(s.opts.IntegrationDir, p.Target))
	}
	return map[string]any{"type": "integration_uninstall", "target": p.Target,
		"details": map[string]any{"messages": []string{"removed " + p.Target + " integration"}}}, nil
}

// IntegrationVersion is the hook version the fake records (herdr 0.8.0 expects v7).
const IntegrationVersion = 7

// RecordIntegration marks target installed in dir, as `herdr integration install`
// writes a hook whose header carries the integration version.
func RecordIntegration(dir, target string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, target), []byte("# HERDR_INTEGRATION_VERSION="+itoa(IntegrationVersion)+"\n"), 0o600)
}

// IntegrationRecorded reports the recorded version of target in dir (0 = none).
func IntegrationRecorded(dir, target string) int {
	b, err := os.ReadFile(filepath.Join(dir, target))
	if err != nil {
		return 0
	}
	v, _ := strings.CutPrefix(strings.TrimSpace(string(b)), "# HERDR_INTEGRATION_VERSION=")
	n := 0
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func herdrBinPath() string {
	p, _ := os.Executable()
	return p
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}
