package core_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"orcr/adapters/shell"
	"orcr/core"
	"orcr/core/wire"
	"orcr/pty"
	"orcr/store"
)

// countingShell is the shell provider whose observers count their Polls: agents
// under polled/ get a polling observer, the others an Unpolled one.
type countingShell struct {
	*shell.Provider
	polled, unpolled atomic.Int64
}

type countingObs struct {
	core.Observer
	n *atomic.Int64
}

func (o countingObs) Poll(ctx context.Context) (*core.Signal, error) {
	o.n.Add(1)
	return o.Observer.Poll(ctx)
}

type unpolledObs struct{ countingObs }

func (unpolledObs) Unpolled() {}

func (p *countingShell) Observe(a wire.Agent) core.Observer {
	if strings.HasPrefix(a.Path, "polled/") {
		return countingObs{p.Provider.Observe(a), &p.polled}
	}
	return unpolledObs{countingObs{p.Provider.Observe(a), &p.unpolled}}
}

// An idle agent whose observer has nothing to poll (core.Unpolled: shell, opencode)
// is never polled on a timer, so 100 idle shell agents wake the server for nothing;
// one with a transcript still is, every second.
func TestUnpolledObserverIsNotPolledOnATimer(t *testing.T) {
	home := t.TempDir()
	st, err := store.Open(home+"/store", nil)
	if err != nil {
		t.Fatal(err)
	}
	prov := &countingShell{Provider: shell.New()}
	eng, err := core.NewEngine(core.Options{Store: st, Host: pty.New(pty.Options{}), Providers: []core.Provider{prov},
		Home: home, Socket: home + "/orcr.sock"})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := &rig{eng: eng, store: st, home: home}
	t.Cleanup(r.stop)
	ctx := context.Background()
	for _, p := range []string{"polled/a", "quiet/a"} {
		if _, err := eng.Run(ctx, wire.RunParams{Path: p, Argv: []string{"sh", "-c", "echo hi; exec sleep 60"}}); err != nil {
			t.Fatal(err)
		}
	}
	// Both loops run side by side: by the time the polled one has had three ticks,
	// the unpolled one would have had two or more.
	waitFor(t, "the polled agent's third poll", 30*time.Second, func() bool { return prov.polled.Load() >= 3 })
	if n := prov.unpolled.Load(); n != 0 {
		t.Fatalf("the unpolled observer was polled %d times", n)
	}
	if _, ok := shell.New().Observe(wire.Agent{}).(core.Unpolled); !ok {
		t.Fatal("the shell provider's observer is not core.Unpolled: every idle shell agent is polled each second")
	}
}
