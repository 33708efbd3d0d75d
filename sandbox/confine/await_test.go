package confine

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"orcr/testutil/wait"
)

// A waiting launcher takes a launch only from its server: a connection from any other
// process (here this test, the server being pid 1) gets no answer, and the launcher
// goes on waiting until its idle end. A launch from the server that cannot be taken (a
// folder that does not exist) is answered with the error, and nothing is exec'd.
func TestAwaitTakesLaunchesOnlyFromItsServer(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	launch, _ := json.Marshal(Launch{Policy: "/nonexistent/policy.json", Argv: []string{"true"}, Cwd: "/nonexistent/cwd"})
	send := func(sock string) string {
		t.Helper()
		var c net.Conn
		wait.For(t, 10*time.Second, "the launcher listening", func() bool {
			var err error
			c, err = net.Dial("unix", sock)
			return err == nil
		})
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		c.Write(append(launch, '\n'))
		b, _ := io.ReadAll(c)
		return string(b)
	}

	sock := filepath.Join(dir, "a.sock")
	done := make(chan error, 1)
	go func() { done <- Await(sock, 1, 3*time.Second, io.Discard) }()
	if got := send(sock); got != "" {
		t.Errorf("a launch from another process than the server was answered %q", got)
	}
	if err := <-done; !errors.Is(err, ErrAwaitEnded) {
		t.Errorf("Await after its idle time: %v, want ErrAwaitEnded", err)
	}

	sock = filepath.Join(dir, "b.sock")
	go func() { done <- Await(sock, os.Getpid(), time.Minute, io.Discard) }()
	if got := send(sock); got == "" || got == "ok\n" {
		t.Errorf("a launch into a missing folder was answered %q", got)
	}
	if err := <-done; err == nil || errors.Is(err, ErrAwaitEnded) {
		t.Errorf("Await of a launch into a missing folder: %v", err)
	}
}

// A folder others may enter is refused before anything listens.
func TestAwaitRefusesAnOpenFolder(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Await(filepath.Join(dir, "s.sock"), os.Getpid(), time.Second, io.Discard); err == nil || errors.Is(err, ErrAwaitEnded) {
		t.Fatalf("Await in a 0755 folder: %v", err)
	}
}

// The launch's environment is the pane's less what the host removes, with TMUX naming
// the session the window joined and PWD its folder, and the launch's variables over it.
func TestLaunchEnv(t *testing.T) {
	pane := []string{"TMUX=/s/tmux.sock,42,1", "TMUX_PANE=%3", "TERM=tmux-256color", "SHELL=/bin/bash", "TERM_PROGRAM=tmux", "PWD=/root", "HOME=/root"}
	got := LaunchEnv(pane, Launch{Cwd: "/w", Session: 0, Unset: []string{"SHELL", "TERM_PROGRAM"},
		Env: []string{"HOME=/h", "PATH=/bin"}})
	want := []string{"TMUX=/s/tmux.sock,42,0", "TMUX_PANE=%3", "TERM=tmux-256color", "PWD=/w", "HOME=/h", "PATH=/bin"}
	if !slices.Equal(got, want) {
		t.Fatalf("LaunchEnv:\n got %q\nwant %q", got, want)
	}
}
