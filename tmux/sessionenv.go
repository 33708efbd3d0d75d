package tmux

import (
	"os"
	"sort"
	"strings"
)

// The session's environment. A window made in orcr's session starts from the
// session's environment (the global one is kept empty, configure), then the
// new-window's -e variables, then what tmux sets itself. Every pane's LaunchSpec.Env
// is mostly the server's own environment, so configure makes that the session's and a
// launch passes only what differs from it (the agent's ORCR_ variables, TERM, its
// --env) and unsets with env(1) what it must not have (a credential of another
// provider): a window line of about 10 variables instead of 44. tmux parses every -e
// of a line; with the 44 a window cost its server 1.9–2.4 ms of CPU against 1.1–1.3 ms
// for a bare new-window (200 windows per run on one control client, three runs each,
// load 8–10).
// The pane's environment stays exactly its LaunchSpec.Env (TestEnvExactAcrossLaunches).

// alwaysPassed are the variables tmux sets in every pane after the session's
// environment (TERM from default-terminal, TERM_PROGRAM, TERM_PROGRAM_VERSION, SHELL,
// TMUX, TMUX_PANE): the session's value would never reach the pane, so a spec's own
// goes with every launch (SHELL through env(1), launchArgv), and they are never part
// of the session's environment.
var alwaysPassed = map[string]bool{
	"TERM": true, "TERM_PROGRAM": true, "TERM_PROGRAM_VERSION": true, "SHELL": true,
	"TMUX": true, "TMUX_PANE": true,
}

// sessionEnv is the environment configure gives orcr's session: this process's own,
// without what is an agent's own (ORCR_), what tmux sets itself, and values that
// would not come back on one line of show-environment.
func sessionEnv() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || alwaysPassed[k] || strings.HasPrefix(k, "ORCR_") || strings.ContainsAny(v, "\n\r") {
			continue
		}
		env[k] = v
	}
	return env
}

// sessionEnvLines are the set-environment commands that turn the session's
// environment from current (show-environment's lines: NAME=VALUE, or -NAME for a
// name removed) into want.
func sessionEnvLines(current []string, want map[string]string) []string {
	have := map[string]string{}
	for _, l := range current {
		if k, v, ok := strings.Cut(l, "="); ok && !strings.HasPrefix(l, "-") {
			have[k] = v
		}
	}
	var lines []string
	for _, k := range sortedKeys(have) {
		if _, ok := want[k]; !ok {
			lines = append(lines, "set-environment -t "+session+" -u "+quote(k))
		}
	}
	for _, k := range sortedKeys(want) {
		if v, ok := have[k]; !ok || v != want[k] {
			lines = append(lines, "set-environment -t "+session+" "+quote(k)+" "+quote(want[k]))
		}
	}
	return lines
}

// envDiff says what a window of env needs beside the session's environment base: the
// variables to add (NAME=VALUE, in env's order: a name given more than once goes every
// time, so the last wins as it does with tmux's -e) and the names of base to unset.
func envDiff(base map[string]string, env []string) (add, unset []string) {
	count := make(map[string]int, len(env))
	for _, kv := range env {
		if k, _, ok := strings.Cut(kv, "="); ok && k != "" {
			count[k]++
		}
	}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			continue
		}
		if k == "SHELL" {
			continue // set by env(1): tmux sets its own after the -e (launchArgv)
		}
		if b, in := base[k]; alwaysPassed[k] || !in || b != v || count[k] > 1 {
			add = append(add, kv)
		}
	}
	for _, k := range sortedKeys(base) {
		if count[k] == 0 {
			unset = append(unset, k)
		}
	}
	return add, unset
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
