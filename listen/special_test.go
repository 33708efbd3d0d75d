package listen

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A listener file that is a FIFO or links to /dev/zero is refused with the reason, and
// the directory's other listeners still load.
func TestSpecialListenerFilesRefused(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.toml"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.toml")); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"fifo": "(it is a named pipe)", "zero": "(it is a character device)"} {
		_, err := LoadFile(filepath.Join(dir, name+".toml"))
		if err == nil || !strings.Contains(err.Error(), "is not a regular file "+want) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
