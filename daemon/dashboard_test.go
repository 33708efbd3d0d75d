package daemon

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"orcr/config"
	"orcr/core/socket"
	"orcr/testutil/wait"
)

// syncBuffer is a bytes.Buffer safe to read while another goroutine writes it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestDashboardWaitsForStartingServer: a server that holds the home's lock but does
// not answer yet (it is still starting) is waited for, said once on stderr, and the
// dashboard connects when its socket answers; with nobody holding the home it goes on
// to host one at once; a holder that never answers ends the wait with what to do.
func TestDashboardWaitsForStartingServer(t *testing.T) {
	home, err := os.MkdirTemp("", "orcr-dash-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(home) })

	cl, err := dialServer(t.Context(), home, time.Minute, &syncBuffer{})
	if err != nil || cl != nil {
		t.Fatalf("no server: client %v, err %v; want neither", cl, err)
	}

	lock, err := socket.AcquireLock(home) // the starting server
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	var stderr syncBuffer
	type result struct {
		cl  *socket.Client
		err error
	}
	done := make(chan result, 1)
	go func() {
		cl, err := dialServer(context.Background(), home, time.Minute, &stderr)
		done <- result{cl, err}
	}()
	if !wait.Until(20*time.Second, func() bool { return strings.Contains(stderr.String(), "waiting for the orcr server") }) {
		t.Fatalf("no waiting line; stderr %q", stderr.String())
	}
	select {
	case r := <-done:
		t.Fatalf("dialServer returned while the server was starting: %v, %v", r.cl, r.err)
	default:
	}
	ln, err := net.Listen("unix", socket.SocketPath(home)) // the server answers now
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var r result
	select {
	case r = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("dialServer did not connect once the socket answered")
	}
	if r.err != nil || r.cl == nil {
		t.Fatalf("after the server came up: %v, %v", r.cl, r.err)
	}
	r.cl.Close()
	if n := strings.Count(stderr.String(), "orcr: waiting"); n != 1 {
		t.Fatalf("waiting said %d times: %q", n, stderr.String())
	}

	ln.Close()
	os.Remove(filepath.Join(home, "orcr.sock"))
	_, err = dialServer(t.Context(), home, 200*time.Millisecond, &syncBuffer{})
	if err == nil || !strings.Contains(err.Error(), "has not answered") {
		t.Fatalf("a holder that never answers: %v", err)
	}
}

// TestNotifyOptions: [notify] switches reach the dashboard; notify-send is used only
// with a desktop session to show it; the terminal's sequence follows the terminal
// unless [notify] osc names one.
func TestNotifyOptions(t *testing.T) {
	off := false
	env := func(kv map[string]string) func(string) string { return func(k string) string { return kv[k] } }
	found := func(string) (string, error) { return "/usr/bin/notify-send", nil }
	missing := func(string) (string, error) { return "", exec.ErrNotFound }

	o := notifyOptions(config.Notify{Bell: &off, PlanDrafted: &off}, env(map[string]string{"DISPLAY": ":0"}), found)
	if !o.NoBell || o.NoDesktop || !o.Off["plan_drafted"] || o.Off["blocked"] || o.NotifySend != "/usr/bin/notify-send" || o.OSC != "9" {
		t.Fatalf("with a desktop: %+v", o)
	}
	if o := notifyOptions(config.Notify{}, env(map[string]string{}), found); o.NotifySend != "" {
		t.Fatalf("notify-send used over ssh: %+v", o)
	}
	if o := notifyOptions(config.Notify{}, env(map[string]string{"DISPLAY": ":0", "VTE_VERSION": "7600"}), missing); o.NotifySend != "" || o.OSC != "777" {
		t.Fatalf("VTE without notify-send: %+v", o)
	}
	if o := notifyOptions(config.Notify{OSC: "9"}, env(map[string]string{"TERM": "foot"}), missing); o.OSC != "9" {
		t.Fatalf("osc from the config: %+v", o)
	}
}
