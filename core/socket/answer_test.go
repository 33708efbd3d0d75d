package socket

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
	"orcr/pty"
	"orcr/store"
)

// serveSeeded serves a real engine (badger store, pty host) over a socket, its store
// seeded with n exited agents, and returns the socket's path.
func serveSeeded(t *testing.T, n int) string {
	t.Helper()
	home := t.TempDir()
	st, err := store.Open(filepath.Join(home, "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	ctx := context.Background()
	now := time.Now().UTC().Add(-time.Hour)
	for i := range n {
		code := 0
		a := wire.Agent{ID: fmt.Sprintf("0190%04x-0000-7000-8000-%012x", i, i), Path: fmt.Sprintf("fired/a%05d", i),
			Provider: "shell", Cwd: "/tmp", State: wire.StateExited, ExitCode: &code, Host: "pty",
			LastScreen: strings.Repeat("some output line\n", 20), CreatedAt: now, StateAt: now, UpdatedAt: now}
		if err := st.PutAgent(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	path := SocketPath(home)
	eng, err := core.NewEngine(core.Options{Store: st, Host: pty.New(pty.Options{}), Home: home, Socket: path,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close(ctx) })
	srv, err := Listen(path, core.Composed{KernelService: eng}, nil)
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve()
	t.Cleanup(func() { srv.Close() })
	return path
}

// An answer over the ceiling is not written (a client would have to hold all of it): it is
// answered with answer_too_big, carrying the request's id and saying to page or filter,
// and the connection goes on.
func TestAnswerOverTheCeilingIsRefusedWithItsID(t *testing.T) {
	old := maxAnswer
	maxAnswer = 1 << 20
	t.Cleanup(func() { maxAnswer = old })
	path := serveSeeded(t, 2000) // about 2 MiB as JSON
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReaderSize(c, 64<<10)
	ask := func(id, params string) wire.Response {
		t.Helper()
		if _, err := fmt.Fprintf(c, `{"id":%q,"method":"agent.list","params":%s}`+"\n", id, params); err != nil {
			t.Fatal(err)
		}
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("read answer %s: %v", id, err)
		}
		if len(line) > maxAnswer+1 {
			t.Fatalf("answer %s is %d bytes, over the ceiling %d", id, len(line), maxAnswer)
		}
		var resp wire.Response
		if err := json.Unmarshal(line, &resp); err != nil {
			t.Fatal(err)
		}
		return resp
	}
	resp := ask("big", `{"all":true}`)
	if resp.ID != "big" || resp.Error == nil || resp.Error.Code != wire.CodeAnswerTooBig {
		t.Fatalf("answer = id %q error %+v, want answer_too_big for id big", resp.ID, resp.Error)
	}
	if !strings.Contains(resp.Error.Message, "page") || !strings.Contains(resp.Error.Message, `"big"`) {
		t.Errorf("message %q should name the request and say to page or filter", resp.Error.Message)
	}
	// The same connection still answers a request that fits.
	if resp := ask("small", `{"glob":"fired/a0000*"}`); resp.Error != nil || resp.ID != "small" {
		t.Fatalf("small list after the refusal: id %q error %+v", resp.ID, resp.Error)
	}
}
