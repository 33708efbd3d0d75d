package secretenv

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestRedactKeepsNamesAndOrcrValues(t *testing.T) {
	got := Redact(map[string]string{"OPENAI_API_KEY": "sk-1", "ORCR_LISTENER": "triage"})
	if got["OPENAI_API_KEY"] != Redacted || got["ORCR_LISTENER"] != "triage" || !IsRedacted(got) {
		t.Fatalf("redacted %v", got)
	}
	if IsRedacted(map[string]string{"ORCR_LISTENER": "triage"}) {
		t.Fatal("an env of ORCR_* names only hides nothing")
	}
}

func TestSaveLoadNeverFollowsALink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	os.WriteFile(victim, []byte("precious"), 0o644)
	if err := os.Symlink(victim, filepath.Join(dir, FileName)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Load(dir); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Fatalf("load through a link: %v", err)
	}
	if err := Save(dir, map[string]string{"K": "v"}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Fatalf("the link's target was written: %q", b)
	}
	env, ok, err := Load(dir)
	if err != nil || !ok || env["K"] != "v" {
		t.Fatalf("load: %v %v %v", env, ok, err)
	}
	if st, _ := os.Lstat(filepath.Join(dir, FileName)); st.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", st.Mode())
	}
}

func TestResolveSecrets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets.toml")
	os.WriteFile(path, []byte("TOKEN = \"s3cret\"\n"), 0o600)
	got, err := Resolve(map[string]string{"A": "Bearer {{secret.TOKEN}}", "B": "plain"}, path)
	if err != nil || got["A"] != "Bearer s3cret" || got["B"] != "plain" {
		t.Fatalf("resolve: %v %v", got, err)
	}
	if _, err := Resolve(map[string]string{"A": "{{secret.NOPE}}"}, path); err == nil || !strings.Contains(err.Error(), `"NOPE"`) {
		t.Fatalf("unknown secret: %v", err)
	}
	os.Chmod(path, 0o640)
	if _, err := Resolve(map[string]string{"A": "{{secret.TOKEN}}"}, path); err == nil || !strings.Contains(err.Error(), "chmod 600 "+path) {
		t.Fatalf("group-readable secrets: %v", err)
	}
	if os.Geteuid() == 0 {
		os.Chmod(path, 0o600)
		os.Chown(path, 65534, 65534)
		if _, err := Resolve(map[string]string{"A": "{{secret.TOKEN}}"}, path); err == nil || !strings.Contains(err.Error(), "belongs to uid 65534") {
			t.Fatalf("secrets of another user: %v", err)
		}
	}
}

// TestSecretsFileErrors: the secrets file is read by the one strict loader, so a value that
// is not a string names its line (it said "secrets FILE: N must be a string", no line), and a
// file past the bound is refused (it was cut at 1 MiB, so a secret past the cut was reported
// as missing from a file that has it).
func TestSecretsFileErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets.toml")
	os.WriteFile(path, []byte("TOKEN = \"s3cret\"\nPORT = 8080\n"), 0o600)
	if _, err := LoadSecrets(path); err == nil || !strings.Contains(err.Error(), path+":2: PORT is an integer; give a string in quotes") {
		t.Fatalf("a number: %v", err)
	}
	var b strings.Builder
	for i := 0; b.Len() <= maxFile; i++ {
		fmt.Fprintf(&b, "PAD%d = \"%s\"\n", i, strings.Repeat("x", 100))
	}
	b.WriteString("TOKEN = \"s3cret\"\n")
	os.WriteFile(path, []byte(b.String()), 0o600)
	if _, err := Resolve(map[string]string{"A": "{{secret.TOKEN}}"}, path); err == nil || !strings.Contains(err.Error(), "is larger than 1 MiB") {
		t.Fatalf("a file over the bound: %v", err)
	}
}

// Saves of one agent's values at once (a spawn handed over twice after a restart) all
// succeed and leave one whole file and no temporary one; a shared temporary name let
// one save remove another's file under it and fail the launch.
func TestConcurrentSavesAllSucceed(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"TOKEN": "s3cret"}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Go(func() { errs <- Save(dir, env) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got, ok, err := Load(dir)
	if err != nil || !ok || got["TOKEN"] != "s3cret" {
		t.Fatalf("load after concurrent saves: %v %v %v", got, ok, err)
	}
	left, _ := filepath.Glob(filepath.Join(dir, FileName+".new*"))
	if len(left) != 0 {
		t.Fatalf("temporary files left: %v", left)
	}
}
