package modelserver

import (
	"fmt"
	"os"
	"path/filepath"
)

// Homes for the real CLIs pointed at a scripted server (agent-clis.md §7).

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

// PiModel is the model WritePiAgentDir defines, as pi's --model names it.
const PiModel = "scripted/claude-sonnet-4-5"

// WritePiAgentDir makes dir a PI_CODING_AGENT_DIR whose models.json defines provider
// "scripted" (Anthropic Messages API) at the scripted model server at url, with the
// one model PiModel. Run pi with PI_OFFLINE=1 beside it.
func WritePiAgentDir(dir, url string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	cfg := fmt.Sprintf(`{"providers":{"scripted":{"baseUrl":%q,"api":"anthropic-messages","apiKey":"x","models":[{"id":"claude-sonnet-4-5"}]}}}`, url)
	return os.WriteFile(filepath.Join(dir, "models.json"), []byte(cfg), 0o600)
}
