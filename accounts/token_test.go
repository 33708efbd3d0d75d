package accounts

import (
	"os"
	"path/filepath"
	"testing"
)

// The usage poller authenticates with the token each CLI keeps in its own credentials
// file: claude's .credentials.json in CLAUDE_CONFIG_DIR, codex's auth.json in
// CODEX_HOME, each defaulting to a directory in the home directory.
func TestPollTokensReadEachCLIsCredentialsFile(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	write := func(path, body string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(home, ".claude", ".credentials.json"), `{"claudeAiOauth":{"accessToken":"claude-home"}}`)
	write(filepath.Join(home, ".codex", "auth.json"), `{"tokens":{"access_token":"codex-home"}}`)
	other := t.TempDir()
	write(filepath.Join(other, "claude", ".credentials.json"), `{"claudeAiOauth":{"accessToken":"claude-dir"}}`)
	write(filepath.Join(other, "codex", "auth.json"), `{"tokens":{"access_token":"codex-dir"}}`)

	for _, tc := range []struct {
		name string
		got  string
		want string
	}{
		{"claude default dir", claudeToken(Spec{Provider: "claude"}), "claude-home"},
		{"claude config dir", claudeToken(Spec{Provider: "claude", ConfigDir: filepath.Join(other, "claude")}), "claude-dir"},
		{"claude env wins", claudeToken(Spec{Provider: "claude", Env: map[string]string{"CLAUDE_CODE_OAUTH_TOKEN": "env"}}), "env"},
		{"codex default home", codexToken(Spec{Provider: "codex"}), "codex-home"},
		{"codex home", codexToken(Spec{Provider: "codex", Home: filepath.Join(other, "codex")}), "codex-dir"},
		{"no file", codexToken(Spec{Provider: "codex", Home: t.TempDir()}), ""},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: token %q, want %q", tc.name, tc.got, tc.want)
		}
	}
}
