package identity

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"orcr/core/wire"
)

// The environment an identity's agent gets.
const (
	EnvIdentity = "ORCR_IDENTITY"
	EnvMemory   = "ORCR_MEMORY"
)

// blockStart and blockEnd enclose what an identity adds to a system prompt, so a
// request shaped twice (agent restart and fork start from the record's system prompt)
// has its block replaced, not added again.
const blockEnd = "</orcr-identity>"

func blockStart(name string) string { return `<orcr-identity name="` + name + `">` }

// apply adds id to the run request p: the block of instructions and memory at the end
// of the system prompt (replacing one an earlier shaping left), the environment, and
// the memory directory as a directory the provider may write (claude and codex
// --add-dir). notes explain it on the record; a note starting "warning:" is one the
// CLI prints.
func apply(id *Identity, p wire.RunParams) (wire.RunParams, []string) {
	var notes []string
	sys := stripBlock(p.SystemPrompt, id.Name)
	head := fmt.Sprintf("%s\nYou act as the identity %q", blockStart(id.Name), id.Name)
	if id.Description != "" {
		head += ": " + id.Description
	}
	head += fmt.Sprintf(".\nYour memory directory is %s — it is yours and it persists across sessions: "+
		"read what is there before you start, and write there (plain files) what you will want to know next time.", id.Memory)
	text := id.Instructions
	if text != "" {
		head += "\n\nYour standing instructions (AGENTS.md):\n\n"
	}
	tail := "\n" + blockEnd
	room := MaxInstructions - len(sys) - len(head) - len(tail)
	if sys != "" {
		room -= 2
	}
	if len(text) > room {
		text = cut(text, max(room, 0))
		notes = append(notes, fmt.Sprintf("warning: identity %s: AGENTS.md is %d bytes; only its first %d are given (the system prompt is capped at %d bytes): shorten %s/AGENTS.md",
			id.Name, max(id.Size, len(id.Instructions)), len(text), MaxInstructions, id.Dir))
	}
	block := head + text + tail
	if sys == "" {
		p.SystemPrompt = block
	} else {
		p.SystemPrompt = sys + "\n\n" + block
	}
	env := maps.Clone(p.Env)
	if env == nil {
		env = map[string]string{}
	}
	env[EnvIdentity], env[EnvMemory] = id.Name, id.Memory
	p.Env = env
	if flag := addDir(p.Provider, id.Memory); flag != nil && !hasAll(p.Argv, flag) {
		p.Argv = append(slices.Clone(flag), p.Argv...)
	}
	p.Identity = id.Name
	notes = append(notes, fmt.Sprintf("identity %s: memory %s", id.Name, id.Memory))
	return p, notes
}

// addDir is the provider's flag that lets it write dir beside its working folder
// (nil: the provider has none; the memory is then named in the prompt only).
// claude's --add-dir takes several directories, so the value is joined with "=" to
// keep the prompt after it from being read as one more.
func addDir(provider, dir string) []string {
	switch provider {
	case "claude":
		return []string{"--add-dir=" + dir}
	case "codex":
		return []string{"--add-dir", dir}
	}
	return nil
}

// hasAll reports whether argv already holds flag's words in order.
func hasAll(argv, flag []string) bool {
	for i := 0; i+len(flag) <= len(argv); i++ {
		if slices.Equal(argv[i:i+len(flag)], flag) {
			return true
		}
	}
	return false
}

// stripBlock removes name's block (and the blank line before it) from sys.
func stripBlock(sys, name string) string {
	start := strings.Index(sys, blockStart(name))
	if start < 0 {
		return sys
	}
	end := strings.Index(sys[start:], blockEnd)
	if end < 0 {
		return strings.TrimRight(sys[:start], "\n")
	}
	return strings.TrimRight(sys[:start], "\n") + sys[start+end+len(blockEnd):]
}

// cut shortens s to at most n bytes at a line end when one is near, else at a rune
// boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 {
		if r, _ := utf8.DecodeLastRuneInString(s); r != utf8.RuneError {
			break
		}
		s = s[:len(s)-1] // a rune the cut split
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 && len(s)-i < 4096 {
		s = s[:i]
	}
	return s
}
