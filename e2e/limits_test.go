package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/store"
)

// seedFinished writes n exited agents straight into the home's store (real badger), as a
// listener that fired thousands of short agents leaves it, before the server starts.
func seedFinished(t *testing.T, home string, n int) {
	t.Helper()
	st, err := store.Open(filepath.Join(home, "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Add(-time.Hour)
	for i := range n {
		code := 0
		start := now.Add(-time.Duration(i) * time.Second)
		end := start.Add(time.Second)
		a := wire.Agent{ID: fmt.Sprintf("0190%04x-0000-7000-8000-%012x", i, i), Path: fmt.Sprintf("fired/g%02d/a%05d", i%50, i),
			Provider: "shell", Cwd: "/tmp", State: wire.StateExited, ExitCode: &code, Argv: []string{"true"},
			StateSource: "host", StateReason: "process exited", Host: "pty", LastScreen: strings.Repeat("some output line\n", 20),
			CreatedAt: start, StartedAt: &start, StateAt: end, EndedAt: &end, UpdatedAt: end}
		if err := st.PutAgent(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
}

// `orcr agent ls --all --json` over 11,000 records ended with "connection to orcr server
// lost: EOF": the one answer line was over the 4 MiB bound on unread answer bytes, and the
// server closed the connection as one that does not read its answers. One answer is now
// written whole; the bound counts only answers queued behind it.
func TestListOf11000RecordsOverTheSocketCompletes(t *testing.T) {
	const n = 11000
	e := newEnv(t)
	seedFinished(t, e.home, n)
	e.serve()
	r := e.orcr("agent", "ls", "--all", "--json")
	if r.code != 0 {
		t.Fatalf("agent ls --all --json: exit %d: %s", r.code, r.err)
	}
	if len(r.out) <= 4<<20 {
		t.Fatalf("the answer is %d bytes; the test needs one over the 4 MiB unread bound", len(r.out))
	}
	var res wire.ListResult
	if err := json.Unmarshal([]byte(r.out), &res); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if len(res.Agents) != n {
		t.Fatalf("listed %d agents, want %d", len(res.Agents), n)
	}
}
