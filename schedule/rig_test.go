package schedule_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"orcr/adapters/shell"
	"orcr/core"
	"orcr/pty"
	"orcr/schedule"
	"orcr/store"
	"orcr/testutil/wait"
)

// clock is real time plus a jump the test controls.
type clock struct{ off atomic.Int64 }

func (c *clock) now() time.Time       { return time.Now().Add(time.Duration(c.off.Load())) }
func (c *clock) jump(d time.Duration) { c.off.Add(int64(d)) }

// rig is a server's worth of kernel and schedules on a real badger store and the
// embedded pty host, wired as the daemon wires them.
type rig struct {
	eng   *core.Engine
	sched *schedule.Service
	store *store.Store
	clk   *clock
	home  string
}

func newRig(t *testing.T, home string, clk *clock) *rig {
	t.Helper()
	if home == "" {
		home = t.TempDir()
	}
	if clk == nil {
		clk = &clock{}
	}
	st := openStore(t, home)
	eng, err := core.NewEngine(core.Options{Store: st, Host: pty.New(pty.Options{}), Providers: []core.Provider{shell.New()},
		Home: home, Socket: home + "/orcr.sock", Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	sched, err := schedule.New(schedule.Options{Home: home, Socket: home + "/orcr.sock", Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(context.Background(), sched); err != nil {
		t.Fatal(err)
	}
	r := &rig{eng: eng, sched: sched, store: st, clk: clk, home: home}
	t.Cleanup(r.stop)
	return r
}

func openStore(t *testing.T, home string) *store.Store {
	t.Helper()
	st, err := store.Open(home+"/store", nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func (r *rig) stop() {
	if r.eng == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r.sched.Close()
	r.eng.Close(ctx)
	r.store.Close()
	r.eng = nil
}

func waitFor(t *testing.T, what string, d time.Duration, cond func() bool) {
	t.Helper()
	wait.For(t, d, what, cond)
}
