package regfile

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	ok := filepath.Join(dir, "ok.toml")
	os.WriteFile(ok, []byte("a = 1\n"), 0o600)
	link := filepath.Join(dir, "link.toml")
	os.Symlink(ok, link)
	if b, err := Read(link); err != nil || string(b) != "a = 1\n" {
		t.Fatalf("a link to a regular file: %q, %v", b, err)
	}
	if _, err := Read(filepath.Join(dir, "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("a missing file: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	zero := filepath.Join(dir, "zero")
	os.Symlink("/dev/zero", zero)
	big := filepath.Join(dir, "big")
	os.WriteFile(big, make([]byte, 11), 0o600)
	for _, c := range []struct {
		path string
		max  int64
		is   error
		want string
	}{
		{fifo, MaxConfig, ErrNotRegular, "fifo is not a regular file (it is a named pipe); point it at a regular file"},
		{zero, MaxConfig, ErrNotRegular, "zero is not a regular file (it is a character device)"},
		{dir, MaxConfig, ErrNotRegular, "is not a regular file (it is a directory)"},
		{big, 10, ErrTooLarge, "big is larger than 10 bytes"},
	} {
		_, err := ReadMax(context.Background(), c.path, c.max)
		if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.path, err, c.want)
		}
	}
	if b, err := ReadMax(context.Background(), big, 11); err != nil || len(b) != 11 {
		t.Fatalf("a file of exactly the bound: %d bytes, %v", len(b), err)
	}
}
