package workflow

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"orcr/adapters/shell"
	"orcr/core"
	"orcr/pty"
	"orcr/store"
	"orcr/testutil/wait"
	wfapi "orcr/workflow/api"
)

// A run's end is what the server's memory policy hears as a burst's settled end
// (Options.Settled): once, when the run's last item has ended and before anyone can
// read the run's end, never while its items run. A 1,000-item for_each of instant
// programs left the garbage of its last items resident when its last program's end
// found too little counted since the return before it (daemon's memPolicy); called
// after the run's end was stored, a status read in between saw the run done and the
// memory not yet returned (+34 MB against +18 to +24 in one run of ten).
func TestSettledWhenARunFinishes(t *testing.T) {
	home := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "cfg"))
	dir := UserDir()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	src := `[[steps]]
name = "list"
provider = "shell"
argv = ["sh", "-c", "echo '{\"items\": [1, 2, 3]}' > \"$ORCR_OUTPUT\""]
outputs = { items = "list" }
[[steps]]
name = "each"
provider = "shell"
for_each = "steps.list.items"
max_parallel = 2
argv = ["sh", "-c", "echo '{\"n\": {{item}}}' > \"$ORCR_OUTPUT\""]
outputs = { n = "int" }
`
	if err := os.WriteFile(filepath.Join(dir, "fan.toml"), []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(home, "store"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	eng, err := core.NewEngine(core.Options{Store: st, Host: pty.New(pty.Options{}), Providers: []core.Provider{shell.New()},
		Home: home, Socket: filepath.Join(home, "orcr.sock")})
	if err != nil {
		t.Fatal(err)
	}
	var settled atomic.Int32
	var doneAtSettle, itemsLeftAtSettle atomic.Bool
	var s *Service
	s = New(Options{Home: home, Settled: func() {
		settled.Add(1)
		r, err := s.Get(context.Background(), "fan")
		if err != nil || r.State != RunRunning {
			doneAtSettle.Store(true)
		}
		for _, sr := range r.Steps {
			for _, it := range sr.Items {
				if it.State == Pending || it.State == Starting {
					itemsLeftAtSettle.Store(true)
				}
			}
		}
	}})
	if err := eng.Start(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	defer func() {
		s.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		eng.Close(ctx)
	}()
	ctx := context.Background()
	r, err := s.Begin(ctx, wfapi.RunParams{Workflow: "fan"})
	if err != nil {
		t.Fatal(err)
	}
	if n := settled.Load(); n != 0 && r.State == RunRunning {
		t.Fatalf("settled %d times while the run was running", n)
	}
	if !wait.Until(wait.Scale(30*time.Second), func() bool {
		r, err = s.Get(ctx, r.ID)
		return err == nil && r.State != RunRunning
	}) {
		t.Fatalf("run %s still %s (%v)", r.ID, r.State, err)
	}
	if r.State != RunDone {
		t.Fatalf("run %s %s: %s", r.ID, r.State, r.Why)
	}
	// Settled is called before the run's end can be read: it has been by now.
	if settled.Load() == 0 {
		t.Fatal("the run's end could be read before it settled")
	}
	if doneAtSettle.Load() {
		t.Fatal("settled after the run's end was stored: a reader could see it first")
	}
	if itemsLeftAtSettle.Load() {
		t.Fatal("settled while items were still to start")
	}
	if n := settled.Load(); n != 1 {
		t.Fatalf("settled %d times for one run; want 1", n)
	}
}
