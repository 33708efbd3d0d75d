package secretenv

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A secrets file that is a FIFO blocked every spawn that named a secret in open(2); it is
// refused at once with the reason.
func TestFIFOSecretsFileRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secrets.toml")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadSecrets(path); err == nil || !strings.Contains(err.Error(), "is not a regular file") {
		t.Fatalf("a FIFO secrets file: %v", err)
	}
}
