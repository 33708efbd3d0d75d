package identity

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"orcr/core/wire"
)

func dirs(t *testing.T) Dirs {
	d := t.TempDir()
	return Dirs{Config: filepath.Join(d, "config"), Data: filepath.Join(d, "data")}
}

func write(t *testing.T, path, text string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o700)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestApplyCapsAndReplaces: an AGENTS.md over the cap is cut at a line end to what
// keeps the whole system prompt under MaxInstructions, with a warning; shaping the
// result again (agent restart) replaces the block instead of adding a second; the
// provider's --add-dir is added once.
func TestApplyCapsAndReplaces(t *testing.T) {
	d := dirs(t)
	line := "é rule: keep going ✓\n"
	write(t, filepath.Join(d.Config, "big", "identity.toml"), "description = \"Big.\"\n")
	write(t, filepath.Join(d.Config, "big", "AGENTS.md"), strings.Repeat(line, 200<<10/len(line)))
	id, err := Load(context.Background(), d, "big")
	if err != nil {
		t.Fatal(err)
	}
	p := wire.RunParams{Provider: "claude", SystemPrompt: "ROLE PROMPT", Argv: []string{"--permission-mode", "plan"}}
	q, notes := apply(id, p)
	if len(q.SystemPrompt) > MaxInstructions || !utf8.ValidString(q.SystemPrompt) || !strings.HasPrefix(q.SystemPrompt, "ROLE PROMPT\n\n") ||
		!strings.HasSuffix(q.SystemPrompt, "keep going ✓\n"+blockEnd) {
		t.Fatalf("system prompt: %d bytes, ends %q", len(q.SystemPrompt), q.SystemPrompt[len(q.SystemPrompt)-60:])
	}
	if len(notes) == 0 || !strings.HasPrefix(notes[0], "warning: identity big: AGENTS.md is ") {
		t.Fatalf("notes: %q", notes)
	}
	again, _ := apply(id, q)
	if again.SystemPrompt != q.SystemPrompt || strings.Count(strings.Join(again.Argv, " "), "--add-dir=") != 1 {
		t.Fatalf("shaped twice: %d blocks, argv %q", strings.Count(again.SystemPrompt, blockStart("big")), again.Argv)
	}
	if q.Argv[0] != "--add-dir="+id.Memory || q.Env[EnvMemory] != id.Memory || q.Identity != "big" {
		t.Fatalf("argv %q env %v", q.Argv, q.Env)
	}
	if p.Env != nil || len(p.Argv) != 2 {
		t.Fatal("apply changed its input")
	}
}

// TestLoadRefuses: a missing identity.toml, one without description, and an AGENTS.md
// that is a directory or a link out of the identity's directory each fail with why.
func TestLoadRefuses(t *testing.T) {
	d := dirs(t)
	os.MkdirAll(filepath.Join(d.Config, "empty"), 0o700)
	write(t, filepath.Join(d.Config, "nodesc", "identity.toml"), "\n")
	write(t, filepath.Join(d.Config, "dir", "identity.toml"), "description = \"d\"\n")
	os.MkdirAll(filepath.Join(d.Config, "dir", "AGENTS.md"), 0o700)
	write(t, filepath.Join(d.Config, "out", "identity.toml"), "description = \"d\"\n")
	write(t, filepath.Join(d.Config, "secret.md"), "SECRET\n")
	os.Symlink("../secret.md", filepath.Join(d.Config, "out", "AGENTS.md"))
	os.MkdirAll(filepath.Join(d.Config, "tomlout"), 0o700)
	os.Symlink("../secret.md", filepath.Join(d.Config, "tomlout", "identity.toml"))
	for name, want := range map[string]string{
		"tomlout": "identity.toml is a symlink to",
		"empty":   "has no identity.toml",
		"nodesc":  "description",
		"dir":     "not a regular file",
		"out":     "outside the identity's directory",
	} {
		_, err := Load(context.Background(), d, name)
		if wire.CodeOf(err) != wire.CodeUnknownIdentity || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
	ls := List(context.Background(), d)
	if len(ls) != 5 || ls[0].Err == nil {
		t.Fatalf("list: %+v", ls)
	}
}
