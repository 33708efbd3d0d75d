package accounts

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	"orcr/internal/regfile"
)

// checkLogin says whether an account bills per token (an API key: no windows),
// whether it looks logged in, and — for a configured account — why admission must
// skip it, with the command that fixes it. An implicit account is the user's own
// login: never skipped, only reported.
func checkLogin(sp Spec, implicit bool, home string) (perToken, loggedIn bool, problem string) {
	env := func(k string) string {
		if v, ok := sp.Env[k]; ok {
			return v
		}
		if implicit {
			return os.Getenv(k)
		}
		return ""
	}
	switch sp.Provider {
	case "claude":
		if env("ANTHROPIC_API_KEY") != "" || env("ANTHROPIC_AUTH_TOKEN") != "" {
			return true, true, ""
		}
		if env("CLAUDE_CODE_OAUTH_TOKEN") != "" {
			return false, true, ""
		}
		dir := sp.ConfigDir
		if dir == "" && implicit {
			dir = os.Getenv("CLAUDE_CONFIG_DIR")
		}
		global := filepath.Join(dir, ".claude.json")
		if dir == "" {
			dir, global = filepath.Join(home, ".claude"), filepath.Join(home, ".claude.json")
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			if implicit {
				return false, false, ""
			}
			return false, false, "config dir " + dir + " does not exist; log in with: CLAUDE_CONFIG_DIR=" + dir + " claude /login"
		}
		if fileExists(filepath.Join(dir, ".credentials.json")) || jsonHas(global, "oauthAccount") {
			return false, true, ""
		}
		if implicit {
			return false, false, ""
		}
		return false, false, "not logged in; log in with: CLAUDE_CONFIG_DIR=" + dir + " claude /login"
	case "codex":
		if env("OPENAI_API_KEY") != "" {
			return true, true, ""
		}
		dir := sp.Home
		if dir == "" && implicit {
			dir = os.Getenv("CODEX_HOME")
		}
		if dir == "" {
			dir = filepath.Join(home, ".codex")
		}
		if st, err := os.Stat(dir); err != nil || !st.IsDir() {
			if implicit {
				return false, false, ""
			}
			return false, false, "home " + dir + " does not exist; log in with: CODEX_HOME=" + dir + " codex login"
		}
		if fileExists(filepath.Join(dir, "auth.json")) {
			return false, true, ""
		}
		// A custom model provider in its config.toml brings its own key (env_key).
		if b, err := regfile.Read(filepath.Join(dir, "config.toml")); err == nil && strings.Contains(string(b), "model_providers") {
			return false, true, ""
		}
		if implicit {
			return false, false, ""
		}
		return false, false, "not logged in; log in with: CODEX_HOME=" + dir + " codex login"
	}
	return false, true, ""
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && !st.IsDir()
}

func jsonHas(path, key string) bool {
	b, err := regfile.Read(path)
	if err != nil {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	v, ok := m[key]
	return ok && string(v) != "null"
}
