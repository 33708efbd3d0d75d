package early

import (
	"bytes"
	"strings"
	"syscall"
	"testing"
)

// ReadLine gives each line whole: one longer than a read (a listing of many agents),
// arriving in pieces, and two lines in one read; then EOF once the peer closes.
func TestReadLineWholeLines(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fds[0])
	long := strings.Repeat("x", 100<<10) + "\n"
	go func() {
		defer syscall.Close(fds[1])
		for rest := []byte(long + "a\nb\n"); len(rest) > 0; {
			n := min(len(rest), 3000)
			if _, err := syscall.Write(fds[1], rest[:n]); err != nil {
				return
			}
			rest = rest[n:]
		}
	}()
	c := &Conn{FD: fds[0]}
	for _, want := range []string{long, "a\n", "b\n"} {
		got, err := c.ReadLine()
		if err != nil || !bytes.Equal(got, []byte(want)) {
			t.Fatalf("ReadLine: %d bytes (%v), want %d", len(got), err, len(want))
		}
	}
	if _, err := c.ReadLine(); err == nil || err.Error() != "EOF" {
		t.Fatalf("after the peer closed: %v, want EOF", err)
	}
}
