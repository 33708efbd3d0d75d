package socket

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
)

// The socket is made 0600 from its first instant without changing the process's
// umask: the server's features make folders and start programs (a run's worktree,
// made with `git checkout`) while it listens, and the process-wide umask of 0177 that
// listenAt set around its bind made such a worktree's folder 0600 — no search — and
// its files 0600, so its coder (root without capabilities, DESIGN §16) could neither
// write there nor find its .git: e2e TestRunSurvivesKill9, after a restart, "cannot
// create M4.txt: Permission denied" and "not a git repository". Here folders are made
// with 0755 while the socket is made again and again; each must come out 0755.
func TestListenLeavesTheUmaskAlone(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := t.TempDir()
	var stop atomic.Bool
	var wg sync.WaitGroup
	var bad atomic.Value
	var made atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load(); i++ {
			d := filepath.Join(dir, fmt.Sprintf("d%d", i%4))
			if err := os.Mkdir(d, 0o755); err != nil {
				bad.Store(err.Error())
				return
			}
			st, err := os.Stat(d)
			if err == nil && st.Mode().Perm() != 0o755 {
				bad.Store(fmt.Sprintf("a folder made with 0755 while the socket was made is %#o", st.Mode().Perm()))
				return
			}
			os.Remove(d)
			made.Add(1)
		}
	}()
	path := filepath.Join(t.TempDir(), "s.sock")
	for i := 0; i < 3000 && bad.Load() == nil; i++ {
		srv, err := Listen(path, nil, nil)
		if err != nil {
			stop.Store(true)
			wg.Wait()
			t.Fatal(err)
		}
		st, err := os.Lstat(path)
		if err != nil || st.Mode().Perm() != 0o600 {
			stop.Store(true)
			wg.Wait()
			t.Fatalf("socket %v, mode %v: want 0600", err, st.Mode())
		}
		srv.Close()
	}
	stop.Store(true)
	wg.Wait()
	if b := bad.Load(); b != nil {
		t.Fatal(b)
	}
	t.Logf("%d folders made meanwhile", made.Load())
}
