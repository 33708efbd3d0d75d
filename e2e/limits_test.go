package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"orcr/core"
	"orcr/core/wire"
	"orcr/store"
)

// seedFinished writes n exited agents straight into the home's store (real badger), as a
// listener that fired thousands of short agents leaves it, before the server starts.
// Each ran `true` without a prompt.
func seedFinished(t *testing.T, home string, n int) {
	t.Helper()
	seedFinishedPrompted(t, home, n, "")
}

// seedFinishedPrompted is seedFinished with the agents' prompt: a long one (an
// issue's body a listener passed on) makes the records large without more of them
// (the store takes one write at a time, 4-7 ms each under -race at a load of 18-28).
func seedFinishedPrompted(t *testing.T, home string, n int, prompt string) {
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
			Provider: "shell", Cwd: "/tmp", State: wire.StateExited, ExitCode: &code, Argv: []string{"true"}, Prompt: prompt,
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
// written whole; the bound counts only answers queued behind it. The answer's size is
// what matters, not the records' number: 1,200 records with a 4 KB prompt each make one
// of about 6 MB (11,000 records without took 45 s of the test's 83 s to put into the
// store, one write at a time, at a load of 18).
func TestListOverTheUnreadBoundOverTheSocketCompletes(t *testing.T) {
	const n = 1200
	e := newEnv(t)
	seedFinishedPrompted(t, e.home, n, strings.Repeat("A line of the issue's body. ", 150))
	e.serve()
	r := e.orcr("agent", "ls", "--all", "--json")
	if r.Code != 0 {
		t.Fatalf("agent ls --all --json: exit %d: %s", r.Code, r.Err)
	}
	if len(r.Out) <= 4<<20 {
		t.Fatalf("the answer is %d bytes; the test needs one over the 4 MiB unread bound", len(r.Out))
	}
	var res wire.ListResult
	if err := json.Unmarshal([]byte(r.Out), &res); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if len(res.Agents) != n {
		t.Fatalf("listed %d agents, want %d", len(res.Agents), n)
	}
	// The CLI pages; a client that asks for everything in one answer gets it too.
	c := dialRaw(t, e)
	_ = c.SetDeadline(time.Now().Add(60 * time.Second))
	if _, err := c.Write([]byte(`{"id":"all","method":"agent.list","params":{"all":true}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		t.Fatalf("one answer of %d records: %v", n, err)
	}
	var resp struct {
		ID     string
		Result wire.ListResult
		Error  *wire.Error
	}
	if err := json.Unmarshal(line, &resp); err != nil || resp.Error != nil || len(resp.Result.Agents) != n || len(line) <= 4<<20 {
		t.Fatalf("one answer: %d bytes, %d agents, error %v %v", len(line), len(resp.Result.Agents), resp.Error, err)
	}
}

// Out of the box the queue had no cap and no memory guard, and every admitted agent was
// launched at once: a listener firing 10,500 `true` agents left 9,066 starting for 30
// minutes and 6,725 tmux windows. With no [limits] but one provider cap, a burst on the
// real tmux host now never has more than core.MaxLaunching agents starting (being
// launched) at once, every one of them still runs, and `orcr queue` and `orcr doctor` show
// each cap with where it came from.
func TestBurstWithDefaultConfigLaunchesWithinTheBound(t *testing.T) {
	const n = 30
	e := newTmuxEnv(t, noCLIs(t), plainShell)
	cfgDir := filepath.Join(filepath.Dir(e.home), "config", "orcr")
	if err := os.MkdirAll(cfgDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfgDir, "config.toml"), []byte("[limits]\nclaude = 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.serve()
	c := e.client()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	events, err := c.Subscribe(ctx, wire.SubscribeParams{After: info.LastSeq})
	if err != nil {
		t.Fatal(err)
	}
	// The event stream says exactly when each agent enters and leaves starting; the
	// most at once is the number of launches in flight.
	type peak struct{ most, done int }
	res := make(chan peak, 1)
	go func() {
		starting := map[string]bool{}
		var p peak
		for ev := range events {
			if ev.Agent == nil || !strings.HasPrefix(ev.Agent.Path, "burst/") {
				continue
			}
			starting[ev.Agent.ID] = ev.Agent.State == wire.StateStarting
			cur := 0
			for _, s := range starting {
				if s {
					cur++
				}
			}
			p.most = max(p.most, cur)
			if ev.Agent.State.Terminal() {
				p.done++
			}
			if p.done == n {
				break
			}
		}
		res <- p
	}()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := c.Run(ctx, wire.RunParams{Path: fmt.Sprintf("burst/a%02d", i), Argv: []string{"true"}}); err != nil {
				t.Errorf("run %d: %v", i, err)
			}
		}()
	}
	wg.Wait()
	var p peak
	select {
	case p = <-res:
	case <-ctx.Done():
		t.Fatalf("the burst did not finish: %v", ctx.Err())
	}
	t.Logf("%d agents; at most %d starting at once", n, p.most)
	if p.most > core.MaxLaunching {
		t.Errorf("%d agents were starting at once; the bound is %d", p.most, core.MaxLaunching)
	}

	var q wire.QueueResult
	if err := json.Unmarshal([]byte(e.must("queue", "--json")), &q); err != nil {
		t.Fatal(err)
	}
	if q.Global <= 0 || q.MinFreeMB <= 0 || q.Caps["codex"] <= 0 {
		t.Errorf("default caps: global %d, min_free_mb %d, codex %d; want all set", q.Global, q.MinFreeMB, q.Caps["codex"])
	}
	for name, want := range map[string]string{"global": "default: ", "min_free_mb": "default: ", "codex": "default: ", "claude": "config"} {
		if !strings.HasPrefix(q.Origins[name], want) {
			t.Errorf("origin of %s = %q, want %q…", name, q.Origins[name], want)
		}
	}
	if q.Caps["claude"] != 3 {
		t.Errorf("claude cap %d, want the config's 3", q.Caps["claude"])
	}
	out := e.must("queue")
	for _, want := range []string{"(global) — default: ", " MB (guard ", "claude", "3  ", "config", "launching 0 / "} {
		if !strings.Contains(out, want) {
			t.Errorf("orcr queue lacks %q:\n%s", want, out)
		}
	}
	if out := e.must("queue", "caps", "--provider", "codex=5"); !strings.Contains(out, "runtime: orcr queue caps") {
		t.Errorf("a cap set with queue caps does not say so:\n%s", out)
	}
	doc := e.must("doctor")
	t.Logf("queue:\n%s\ndoctor:\n%s", out, doc)
	if !strings.Contains(doc, "caps     in force") || !strings.Contains(doc, "min_free_mb") || !strings.Contains(doc, "(default: ") {
		t.Errorf("doctor does not show the caps with their origin:\n%s", doc)
	}
}
