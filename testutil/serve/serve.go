// Package serve starts a real `orcr serve` for whole-program tests and benchmarks: on
// the environment the caller builds (its ORCR_HOME, host, config), it waits until the
// server answers on its socket, fails naming the server's own output when it exits or
// stays silent instead, and stops it when the test ends. Each harness keeps its own
// environment; what they shared is the start, the wait and the stop.
package serve

import (
	"bytes"
	"context"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"orcr/core/socket"
	"orcr/core/wire"
	"orcr/testutil/apiclient"
	"orcr/testutil/proc"
	"orcr/testutil/testbin"
	"orcr/testutil/wait"
)

// Options say how to start the server.
type Options struct {
	// Bin is the orcr binary; empty builds it (testbin.Build).
	Bin string
	// Env is the server's whole environment. It must set ORCR_HOME.
	Env []string
	// Output receives the server's stdout and stderr. Nil keeps them in memory, for
	// the failure message and Output.
	Output io.Writer
	// Timeout bounds the wait for the socket (default 15 s).
	Timeout time.Duration
	// Grace is how long Stop waits after SIGTERM before killing (default 10 s).
	Grace time.Duration
}

// Server is one running `orcr serve`.
type Server struct {
	Cmd    *exec.Cmd
	Home   string // its ORCR_HOME
	Socket string // where it answers

	t      testing.TB
	grace  time.Duration
	out    *lockedBuffer
	exited chan struct{}
	once   sync.Once
}

// Start starts `orcr serve` with o and returns once a client can connect. The server
// is stopped (SIGTERM, then by force) when the test ends, unless stopped before.
func Start(t testing.TB, o Options) *Server {
	t.Helper()
	home := lastValue(o.Env, "ORCR_HOME")
	if home == "" {
		t.Fatal("serve: Options.Env sets no ORCR_HOME")
	}
	if o.Bin == "" {
		o.Bin = testbin.Build(t, "orcr")
	}
	if o.Timeout == 0 {
		o.Timeout = 15 * time.Second
	}
	if o.Grace == 0 {
		o.Grace = 10 * time.Second
	}
	s := &Server{Home: home, Socket: socket.SocketPath(home), t: t, grace: o.Grace, exited: make(chan struct{})}
	cmd := exec.Command(o.Bin, "serve")
	cmd.Env = o.Env
	out := o.Output
	if out == nil {
		s.out = &lockedBuffer{}
		out = s.out
	}
	cmd.Stdout, cmd.Stderr = out, out
	// Its own process group, so a forced stop takes whatever it started along.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("serve: start %s serve: %v", o.Bin, err)
	}
	s.Cmd = cmd
	go func() { _ = cmd.Wait(); close(s.exited) }()
	t.Cleanup(s.Stop)
	var lastErr error
	gone := false
	up := wait.Until(o.Timeout, func() bool {
		select {
		case <-s.exited:
			gone = true
			return true
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		c, err := socket.Dial(ctx, s.Socket, "")
		if err != nil {
			lastErr = err
			return false
		}
		defer c.Close()
		// Up means answering, not only accepting: a connect can land in the backlog
		// of a socket the starting server is still setting up.
		if _, err := wire.CheckPing(wire.Call(ctx, c, wire.Ping, wire.Empty{})); err != nil {
			lastErr = err
			return false
		}
		return true
	})
	said := s.Output()
	if f, ok := o.Output.(interface{ Name() string }); ok {
		said = "see " + f.Name()
	}
	switch {
	case gone:
		t.Fatalf("serve: orcr serve exited at start (%s): %s", cmd.ProcessState, said)
	case !up:
		t.Fatalf("serve: orcr serve did not answer within %s: %v; output: %s", wait.Scale(o.Timeout), lastErr, said)
	}
	return s
}

// PID is the server's process id.
func (s *Server) PID() int { return s.Cmd.Process.Pid }

// Exited is closed when the server process has ended.
func (s *Server) Exited() <-chan struct{} { return s.exited }

// Output is what the server printed so far (empty when Options.Output was given).
func (s *Server) Output() string {
	if s.out == nil {
		return ""
	}
	return s.out.String()
}

// Stop ends the server gracefully (SIGTERM), by force after the grace period. Calling
// it again, or after Kill9, does nothing.
func (s *Server) Stop() {
	s.once.Do(func() { proc.StopWaited(s.Cmd, s.exited, s.grace) })
}

// Kill9 kills the server with SIGKILL, as a crash would, and waits until it is gone.
func (s *Server) Kill9() {
	s.t.Helper()
	s.once.Do(func() {
		if err := s.Cmd.Process.Signal(syscall.SIGKILL); err != nil {
			s.t.Errorf("serve: kill -9 %d: %v", s.PID(), err)
		}
		<-s.exited
	})
}

// Client dials the server as a Go client, closed when the test ends.
func (s *Server) Client() *apiclient.Client {
	s.t.Helper()
	c, err := apiclient.Dial(context.Background(), s.Socket, "")
	if err != nil {
		s.t.Fatalf("serve: dial %s: %v", s.Socket, err)
	}
	s.t.Cleanup(func() { c.Close() })
	return c
}

// lastValue is the value of the last KEY=… in env, as exec uses it.
func lastValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if rest, ok := strings.CutPrefix(kv, key+"="); ok {
			v = rest
		}
	}
	return v
}

// lockedBuffer is a bytes.Buffer the server's output goroutine and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
