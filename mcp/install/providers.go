package install

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// provider is one agent CLI orcr installs into: where its config dir is, its skill
// files, and how orcr mcp is registered in its MCP config (nil: it has none).
type provider struct {
	name string
	// dir is the provider's config dir and the variable that names it (for errors).
	dir func(env func(string) string) (dir, from string)
	// files are the skill files, relative to dir.
	files func(bin string) map[string]string
	// mcp is the MCP config file (relative to dir) and its new content from the old
	// (nil when missing); ours says whether old has orcr registered already by us.
	mcp *mcpEdit
	// invoke is how a user calls the skills in that CLI.
	invoke string
}

// mcpEdit registers and unregisters orcr mcp in one config file.
type mcpEdit struct {
	// path is the config file's path for config dir dir.
	path func(dir string, env func(string) string) string
	// add returns the file with orcr registered; old is nil when the file is missing.
	add func(old []byte, bin string) ([]byte, error)
	// del returns the file without orcr's registration (when the file changed since
	// install and cannot be restored byte for byte).
	del func(cur []byte) ([]byte, error)
}

func homeDir(env func(string) string) string {
	if h := env("HOME"); h != "" {
		return h
	}
	h, _ := os.UserHomeDir()
	return h
}

var providers = map[string]provider{
	"claude": {
		name: "claude",
		dir: func(env func(string) string) (string, string) {
			if d := env("CLAUDE_CONFIG_DIR"); d != "" {
				return d, "$CLAUDE_CONFIG_DIR"
			}
			return filepath.Join(homeDir(env), ".claude"), "~/.claude"
		},
		files: func(bin string) map[string]string {
			out := map[string]string{}
			for _, s := range skills {
				out[filepath.Join("skills", s.name, "SKILL.md")] = "---\nname: " + s.name + "\ndescription: " + yamlString(s.desc) +
					"\nargument-hint: " + yamlString(s.hint) + "\n---\n\n" + s.text(bin) + "\n"
			}
			return out
		},
		// Claude keeps user-scope MCP servers in .claude.json: in $CLAUDE_CONFIG_DIR
		// when set, else beside ~/.claude (in the home folder). The rig's config dir
		// holds it, as CLAUDE_CONFIG_DIR setups do.
		mcp: &mcpEdit{path: func(dir string, env func(string) string) string {
			if env("CLAUDE_CONFIG_DIR") != "" {
				return filepath.Join(dir, ".claude.json")
			}
			return filepath.Join(homeDir(env), ".claude.json")
		}, add: jsonAdd("mcpServers", claudeServer), del: jsonDel("mcpServers")},
		invoke: "/orcr-plan, /orcr-run, /orcr-status",
	},
	"codex": {
		name: "codex",
		dir: func(env func(string) string) (string, string) {
			if d := env("CODEX_HOME"); d != "" {
				return d, "$CODEX_HOME"
			}
			return filepath.Join(homeDir(env), ".codex"), "~/.codex"
		},
		files: func(bin string) map[string]string {
			out := map[string]string{}
			for _, s := range skills {
				out[filepath.Join("prompts", s.name+".md")] = "---\ndescription: " + yamlString(s.desc) +
					"\nargument-hint: " + yamlString(s.hint) + "\n---\n\n" + s.text(bin) + "\n"
			}
			return out
		},
		mcp:    &mcpEdit{path: inDir("config.toml"), add: tomlAdd, del: tomlDel},
		invoke: "/prompts:orcr-plan, /prompts:orcr-run, /prompts:orcr-status",
	},
	"opencode": {
		name: "opencode",
		dir: func(env func(string) string) (string, string) {
			if d := env("XDG_CONFIG_HOME"); d != "" {
				return filepath.Join(d, "opencode"), "$XDG_CONFIG_HOME/opencode"
			}
			return filepath.Join(homeDir(env), ".config", "opencode"), "~/.config/opencode"
		},
		files: func(bin string) map[string]string {
			out := map[string]string{}
			for _, s := range skills {
				out[filepath.Join("command", s.name+".md")] = "---\ndescription: " + yamlString(s.desc) + "\n---\n\n" + s.text(bin) + "\n"
			}
			return out
		},
		mcp:    &mcpEdit{path: inDir("opencode.json"), add: jsonAdd("mcp", opencodeServer), del: jsonDel("mcp")},
		invoke: "/orcr-plan, /orcr-run, /orcr-status",
	},
	"pi": {
		name: "pi",
		dir: func(env func(string) string) (string, string) {
			if d := env("PI_CODING_AGENT_DIR"); d != "" {
				return d, "$PI_CODING_AGENT_DIR"
			}
			return filepath.Join(homeDir(env), ".pi", "agent"), "~/.pi/agent"
		},
		files: func(bin string) map[string]string {
			out := map[string]string{}
			for _, s := range skills {
				out[filepath.Join("prompts", s.name+".md")] = "---\ndescription: " + yamlString(s.desc) + "\n---\n\n" + s.text(bin) + "\n"
			}
			return out
		},
		invoke: "/orcr-plan, /orcr-run, /orcr-status",
	},
}

func inDir(name string) func(string, func(string) string) string {
	return func(dir string, _ func(string) string) string { return filepath.Join(dir, name) }
}

// Names are the providers orcr installs into.
var Names = []string{"claude", "codex", "opencode", "pi"}

func claudeServer(bin string) any {
	return map[string]any{"type": "stdio", "command": bin, "args": []string{"mcp"}}
}

func opencodeServer(bin string) any {
	return map[string]any{"type": "local", "command": []string{bin, "mcp"}, "enabled": true}
}

// jsonAdd sets key.orcr in a JSON object file (made when missing). The file is
// rewritten with two-space indents and its keys sorted: a JSON config's readers do
// not care, and remove puts the original bytes back.
func jsonAdd(key string, server func(bin string) any) func(old []byte, bin string) ([]byte, error) {
	return func(old []byte, bin string) ([]byte, error) {
		doc := map[string]json.RawMessage{}
		if len(bytes.TrimSpace(old)) > 0 {
			if err := json.Unmarshal(old, &doc); err != nil {
				return nil, fmt.Errorf("it is not a JSON object (%v); fix it or register orcr by hand", err)
			}
		}
		servers := map[string]json.RawMessage{}
		if raw, ok := doc[key]; ok && string(raw) != "null" {
			if err := json.Unmarshal(raw, &servers); err != nil {
				return nil, fmt.Errorf("its %q is not an object (%v)", key, err)
			}
		}
		if _, taken := servers["orcr"]; taken {
			return nil, fmt.Errorf("it has an MCP server named orcr already (not installed by orcr install); remove it first")
		}
		b, _ := json.Marshal(server(bin))
		servers["orcr"] = b
		doc[key], _ = json.Marshal(servers)
		out, err := json.MarshalIndent(doc, "", "  ")
		return append(out, '\n'), err
	}
}

// jsonDel removes key.orcr (and key when it is then empty).
func jsonDel(key string) func(cur []byte) ([]byte, error) {
	return func(cur []byte) ([]byte, error) {
		doc := map[string]json.RawMessage{}
		if err := json.Unmarshal(cur, &doc); err != nil {
			return nil, fmt.Errorf("it is not a JSON object any more (%v); remove orcr's %s entry by hand", err, key)
		}
		servers := map[string]json.RawMessage{}
		if raw, ok := doc[key]; ok {
			_ = json.Unmarshal(raw, &servers)
		}
		delete(servers, "orcr")
		if len(servers) == 0 {
			delete(doc, key)
		} else {
			doc[key], _ = json.Marshal(servers)
		}
		out, err := json.MarshalIndent(doc, "", "  ")
		return append(out, '\n'), err
	}
}

// The block orcr appends to codex's config.toml, between two marker comments.
const (
	tomlBegin = "# orcr install codex --mcp: begin (orcr install codex --remove takes it out)"
	tomlEnd   = "# orcr install codex --mcp: end"
)

func tomlAdd(old []byte, bin string) ([]byte, error) {
	for _, line := range strings.Split(string(old), "\n") {
		t := strings.TrimSpace(line)
		if t == "[mcp_servers.orcr]" || strings.HasPrefix(t, "[mcp_servers.orcr.") {
			return nil, fmt.Errorf("it has an MCP server named orcr already ([mcp_servers.orcr], not installed by orcr install); remove it first")
		}
	}
	q, _ := json.Marshal(bin) // a TOML basic string is a JSON string for a path
	block := tomlBegin + "\n[mcp_servers.orcr]\ncommand = " + string(q) + "\nargs = [\"mcp\"]\n" + tomlEnd + "\n"
	out := append([]byte(nil), old...)
	if len(out) > 0 && !bytes.HasSuffix(out, []byte("\n")) {
		out = append(out, '\n')
	}
	if len(out) > 0 {
		out = append(out, '\n')
	}
	return append(out, block...), nil
}

func tomlDel(cur []byte) ([]byte, error) {
	s := string(cur)
	i := strings.Index(s, tomlBegin)
	j := strings.Index(s, tomlEnd)
	if i < 0 || j < i {
		return nil, fmt.Errorf("orcr's [mcp_servers.orcr] block is gone from it; nothing to take out")
	}
	end := j + len(tomlEnd)
	if end < len(s) && s[end] == '\n' {
		end++
	}
	head := strings.TrimSuffix(s[:i], "\n")
	if head != "" {
		head += "\n"
	}
	return []byte(head + s[end:]), nil
}
