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
	return serveSeededWith(t, n, Limits{})
}

// serveSeededWith is serveSeeded under the bounds lim.
func serveSeededWith(t *testing.T, n int, lim Limits) string {
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
	srv, err := Listen(path, core.KernelMethods(eng), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv.SetLimits(lim)
	go srv.Serve()
	t.Cleanup(func() { srv.Close() })
	return path
}

// rawAsk sends one request line on c and reads one answer line.
func rawAsk(t *testing.T, c net.Conn, r *bufio.Reader, id, method, params string) ([]byte, wire.Response) {
	t.Helper()
	if _, err := fmt.Fprintf(c, `{"id":%q,"method":%q,"params":%s}`+"\n", id, method, params); err != nil {
		t.Fatal(err)
	}
	line, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatalf("read the answer to %s: %v", id, err)
	}
	var resp wire.Response
	if err := json.Unmarshal(line, &resp); err != nil {
		t.Fatal(err)
	}
	return line, resp
}

// One answer longer than the bound on unread answer bytes is written whole: the bound is
// on answers queued behind the one being written. Before, `agent ls --all --json` over
// 11,000 records (12 MiB against 4 MiB) ended in "connection to orcr server lost: EOF";
// here the bound is 64 KiB and the answer about 200 KiB (400 records: the store takes one
// write at a time, and 2,000 took most of the test's 21 s at a load of 30).
func TestOneAnswerOverTheUnreadBoundIsWrittenWhole(t *testing.T) {
	const n = 400
	path := serveSeededWith(t, n, Limits{MaxUnread: 64 << 10})
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	line, resp := rawAsk(t, c, r, "all", "agent.list", `{"all":true}`)
	if resp.Error != nil || len(line) <= 64<<10 {
		t.Fatalf("answer of %d bytes, error %+v; want the whole list", len(line), resp.Error)
	}
	var res wire.ListResult
	if err := json.Unmarshal(resp.Result, &res); err != nil || len(res.Agents) != n {
		t.Fatalf("listed %d agents (%v), want %d", len(res.Agents), err, n)
	}
	// The connection is still served.
	if _, resp := rawAsk(t, c, r, "ping", "server.ping", `{}`); resp.Error != nil {
		t.Fatalf("ping after the big answer: %+v", resp.Error)
	}
}

// agent.list pages with limit and after; the socket client walks the pages by itself, so
// a caller gets every agent once, in order.
func TestListPages(t *testing.T) {
	path := serveSeeded(t, 2*wire.ListPage+500)
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	r := bufio.NewReader(c)
	_, resp := rawAsk(t, c, r, "p1", "agent.list", `{"limit":3}`)
	var p1 wire.ListResult
	if err := json.Unmarshal(resp.Result, &p1); err != nil || len(p1.Agents) != 3 || p1.Next != "fired/a00002 "+p1.Agents[2].ID {
		t.Fatalf("first page: %d agents, next %q, %v", len(p1.Agents), p1.Next, err)
	}
	_, resp = rawAsk(t, c, r, "p2", "agent.list", fmt.Sprintf(`{"limit":3,"after":%q}`, p1.Next))
	var p2 wire.ListResult
	if err := json.Unmarshal(resp.Result, &p2); err != nil || len(p2.Agents) != 3 || p2.Agents[0].Path != "fired/a00003" {
		t.Fatalf("second page: %+v, %v", p2.Agents, err)
	}
	// A cursor whose agent is gone goes on after its path.
	_, resp = rawAsk(t, c, r, "gone", "agent.list", `{"limit":1,"after":"fired/a00004x 0"}`)
	var p3 wire.ListResult
	if err := json.Unmarshal(resp.Result, &p3); err != nil || len(p3.Agents) != 1 || p3.Agents[0].Path != "fired/a00005" {
		t.Fatalf("page after a vanished cursor: %+v, %v", p3.Agents, err)
	}
	cl, err := Dial(context.Background(), path, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	as, err := wire.ListAgents(context.Background(), cl, wire.ListParams{})
	if err != nil || len(as) != 2*wire.ListPage+500 {
		t.Fatalf("client list: %d agents, %v", len(as), err)
	}
	for i, a := range as {
		if want := fmt.Sprintf("fired/a%05d", i); a.Path != want {
			t.Fatalf("agent %d is %s, want %s", i, a.Path, want)
		}
	}
	tab, err := wire.ListTable(context.Background(), cl, wire.ListParams{})
	if err != nil || len(tab.Rows) != 2*wire.ListPage+500 {
		t.Fatalf("client table: %v rows, %v", tab, err)
	}
}

// An answer over the ceiling is not written (a client would have to hold all of it): it is
// answered with answer_too_big, carrying the request's id and saying to page or filter,
// and the connection goes on.
func TestAnswerOverTheCeilingIsRefusedWithItsID(t *testing.T) {
	old := maxAnswer
	// A quarter of a MiB against about twice that as JSON: 500 records, not 2,000 against
	// 1 MiB (the store takes one write at a time; the seeding was most of the test).
	maxAnswer = 1 << 18
	t.Cleanup(func() { maxAnswer = old })
	path := serveSeeded(t, 500)
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
	resp := ask("big", `{"all":true,"full":true}`)
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
