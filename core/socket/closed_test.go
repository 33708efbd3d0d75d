package socket

import (
	"bufio"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"orcr/testutil/wait"
)

// Requests from a connection that closed are cancelled: those queued are dropped and those
// running stop, so another client is answered at once. Before, 200 connections that each
// sent 16 `agent.list {"full":true}` and closed after a second left another client waiting
// 29 s for its answer while the server built 3,200 answers nobody would read.
func TestClosedConnectionsRequestsAreCancelled(t *testing.T) {
	const agents, conns, perConn = 2000, 200, 16
	path := serveSeeded(t, agents)
	id := "0190" + "0007" + "-0000-7000-8000-000000000007"
	get := func() time.Duration {
		t.Helper()
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(5 * time.Minute))
		start := time.Now()
		if _, resp := rawAsk(t, c, bufio.NewReader(c), "get", "agent.get", `{"target":"`+id+`"}`); resp.Error != nil {
			t.Fatalf("agent.get: %+v", resp.Error)
		}
		return time.Since(start)
	}
	idle := get()
	// The server's goroutines with no connection open (the client holds none of its own).
	base := runtime.NumGoroutine()

	floodAndClose(t, path, conns, perConn)
	took := get()
	t.Logf("agent.get: %s after the connections closed, %s on an idle server", took, idle)
	if took > 5*time.Second {
		t.Fatalf("agent.get took %s after %d connections with %d heavy lists each closed (%s on an idle server)", took, conns, perConn, idle)
	}
	wait.For(t, 30*time.Second, "the server's goroutines back to their count before the connections", func() bool {
		return runtime.NumGoroutine() <= base+2
	})
}

// A connection that pipelined more than it may have in flight holds the rest unread while
// it waits for a slot; its close is seen there too, and what it queued is dropped. Before,
// the server read and answered every queued request of a closed connection, one slot at a
// time: 20 connections × 400 heavy lists ran for minutes after they closed.
func TestQueuedRequestsOfAClosedConnectionAreDropped(t *testing.T) {
	const conns, perConn = 20, 400
	path := serveSeeded(t, 2000)
	c0, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	_ = c0.SetDeadline(time.Now().Add(time.Minute))
	if _, resp := rawAsk(t, c0, bufio.NewReader(c0), "ping", "server.ping", `{}`); resp.Error != nil {
		t.Fatal(resp.Error)
	}
	c0.Close()
	base := runtime.NumGoroutine()
	floodAndClose(t, path, conns, perConn)
	wait.For(t, 20*time.Second, "the server's goroutines back to their count before the connections", func() bool {
		return runtime.NumGoroutine() <= base+2
	})
}

// A client that shuts only its writing side after its requests (nc -N, socat) still reads:
// its answers are written, not cancelled.
func TestHalfClosedConnectionIsStillAnswered(t *testing.T) {
	path := serveSeeded(t, 50)
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Minute))
	if _, err := c.Write([]byte(strings.Repeat(`{"id":"l","method":"agent.list","params":{"full":true}}`+"\n", 20))); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(c)
	for i := range 20 {
		line, err := r.ReadBytes('\n')
		if err != nil || !strings.Contains(string(line), `"fired/a00049"`) {
			t.Fatalf("answer %d after the client shut its writing side: %.80q, %v", i, line, err)
		}
	}
}

// floodAndClose opens conns connections that each pipeline perConn heavy lists and
// closes them all once the first answer comes, when the server is at work on the others.
func floodAndClose(t *testing.T, path string, conns, perConn int) {
	t.Helper()
	heavy := strings.Repeat(`{"id":"l","method":"agent.list","params":{"full":true,"all":true}}`+"\n", perConn)
	cs := make([]net.Conn, 0, conns)
	for range conns {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		cs = append(cs, c)
		if _, err := c.Write([]byte(heavy)); err != nil {
			t.Fatal(err)
		}
	}
	_ = cs[0].SetReadDeadline(time.Now().Add(time.Minute))
	if _, err := cs[0].Read(make([]byte, 1)); err != nil {
		t.Fatalf("no answer to the heavy lists: %v", err)
	}
	for _, c := range cs {
		c.Close()
	}
}
