package confine

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// A waiting launcher takes a launch only from its server: told the server is pid 1, it
// refuses this test's listener (another process) and reads nothing; told it is this
// process, a launch it cannot take (a folder that does not exist) is answered with the
// error, and nothing is exec'd. With no launch it ends when the server closes.
func TestAwaitTakesLaunchesOnlyFromItsServer(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	launch, _ := json.Marshal(Launch{Policy: "/nonexistent/policy.json", Argv: []string{"true"}, Cwd: "/nonexistent/cwd"})
	// serve listens on sock, runs the launcher, and hands its connection to fn.
	serve := func(name string, server int, fn func(c net.Conn)) error {
		t.Helper()
		ln, err := net.Listen("unix", filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		done := make(chan error, 1)
		go func() { done <- Await(filepath.Join(dir, name), server, "", time.Minute, io.Discard) }()
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		fn(c)
		c.Close()
		return <-done
	}
	answer := func(c net.Conn) string {
		c.Write(append(launch, '\n'))
		b, _ := io.ReadAll(c)
		return string(b)
	}

	var got string
	err := serve("a.sock", 1, func(c net.Conn) { got = answer(c) })
	if got != "" || err == nil || errors.Is(err, ErrAwaitEnded) {
		t.Errorf("with a listener other than its server: answered %q, ended %v", got, err)
	}
	err = serve("b.sock", os.Getpid(), func(c net.Conn) { got = answer(c) })
	if !strings.HasPrefix(got, "error: ") || err == nil || errors.Is(err, ErrAwaitEnded) {
		t.Errorf("a launch into a missing folder: answered %q, ended %v", got, err)
	}
	err = serve("c.sock", os.Getpid(), func(net.Conn) {})
	if !errors.Is(err, ErrAwaitEnded) {
		t.Errorf("its server closed the connection: %v, want ErrAwaitEnded", err)
	}
}

// A folder others may enter is refused before anything listens.
func TestAwaitRefusesAnOpenFolder(t *testing.T) {
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := Await(filepath.Join(dir, "s.sock"), os.Getpid(), "", time.Second, io.Discard); err == nil || errors.Is(err, ErrAwaitEnded) {
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
