package listen_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"orcr/listen"
	"orcr/store"
)

// The daemon's badger store is a listen.Store as it is.
var _ listen.Store = (*store.Store)(nil)

type spawner struct{ spawned map[string]int }

func (s *spawner) Dispatch(_ context.Context, _ listen.Listener, e listen.Event, _ string) error {
	s.spawned[e.ID]++
	return nil
}

func (s *spawner) Done(_ context.Context, d listen.Dispatch) (bool, error) {
	return s.spawned[d.Event.ID] > 0, nil
}

// TestTickOverBadger runs the shell source through the tick on the real store, closes
// and reopens it (a restart), and checks nothing fires twice and the state survived.
func TestTickOverBadger(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	l, err := listen.Parse("nightly", []byte(`interval = "1m"
[source]
type = "shell"
command = "printf 'a\nb\nc\n'"
[action]
path = "work/{{id}}"
role = "r"
prompt = "{{line}}"
[[rate_limits]]
max = 2
per = "1h"
`))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	sp := &spawner{spawned: map[string]int{}}
	run := func() listen.TickResult {
		st, err := store.Open(dir, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		tk := &listen.Ticker{Listener: l, Records: listen.NewRecords(st), Source: listen.ShellSource{Command: l.Source.Command},
			Dispatcher: sp, Now: func() time.Time { return now }}
		res, err := tk.Tick(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := run(); res.Dispatched != 2 || res.Held != 1 {
		t.Fatalf("first: %+v", res)
	}
	now = now.Add(2 * time.Minute)
	// Held at the ceiling: the next poll waits for the window, across the restart.
	if res := run(); res.Skipped != "not due" || res.Held != 1 || !res.NextPoll.Equal(now.Add(58*time.Minute)) {
		t.Fatalf("at the ceiling after a restart: %+v", res)
	}
	now = now.Add(58 * time.Minute)
	if res := run(); res.Dispatched != 1 || res.Held != 0 {
		t.Fatalf("after the window: %+v", res)
	}
	if fmt.Sprint(sp.spawned) != "map[a:1 b:1 c:1]" {
		t.Fatalf("spawned %v", sp.spawned)
	}
}
