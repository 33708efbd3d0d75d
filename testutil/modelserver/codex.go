package modelserver

import (
	"fmt"
	"os"
	"path/filepath"
)

// CodexKeyEnv is the variable the scripted provider of WriteCodexHome reads its API
// key from; any value will do.
const CodexKeyEnv = "SCRIPTED_API_KEY"

// WriteCodexHome makes dir a CODEX_HOME whose config.toml points codex at the scripted
// model server at url (provider "scripted", Responses API, key from $SCRIPTED_API_KEY):
// what the real CLI needs to run unattended here (agent-clis.md §7).
func WriteCodexHome(dir, url string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	cfg := fmt.Sprintf(`model = "gpt-5.3-codex"
model_provider = "scripted"

[model_providers.scripted]
name = "scripted"
base_url = "%s/v1"
env_key = %q
wire_api = "responses"
`, url, CodexKeyEnv)
	return os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o600)
}
