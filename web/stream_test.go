package web_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"orcr/adapters/shell"
	"orcr/core"
	"orcr/core/wire"
	"orcr/pty"
	"orcr/store"
	"orcr/web"
	webapi "orcr/web/api"
)

// A server without a gateway holds nothing for the web: no hub (no ring of encoded
// events, no subscription) and, without [notify] command, no notifier. [notify]
// command alone starts the notifier; the first gateway starts the hub.
func TestNoGatewayHoldsNothing(t *testing.T) {
	for _, c := range []struct {
		name   string
		opts   web.Options
		notify bool
	}{
		{"off", web.Options{}, false},
		{"notify command", web.Options{NotifyCommand: "cat >/dev/null"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			home := t.TempDir()
			st, err := store.Open(home+"/store", nil)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			eng, err := core.NewEngine(core.Options{Store: st, Host: pty.New(pty.Options{}), Providers: []core.Provider{shell.New()},
				Home: home, Socket: home + "/orcr.sock"})
			if err != nil {
				t.Fatal(err)
			}
			svc := web.New(c.opts)
			if err := eng.Start(context.Background(), svc); err != nil {
				t.Fatal(err)
			}
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				eng.Close(ctx)
			}()
			hs := append(core.KernelMethods(eng), svc.Methods()...)
			if addr, err := svc.Serve(hs); addr != "" || err != nil {
				t.Fatalf("Serve with no address: %q %v", addr, err)
			}
			// Tokens are made and listed without a gateway (a wildcard address waits for one).
			var tok webapi.TokenNewResult
			if err := (&localCaller{hs: hs}).call(t, webapi.MethodTokenNew, webapi.TokenNewParams{Scope: webapi.ScopeRead}, &tok); err != nil {
				t.Fatal(err)
			}
			if hub, notifier := svc.Running(); hub || notifier != c.notify {
				t.Fatalf("without a gateway: hub %v, notifier %v (want false, %v)", hub, notifier, c.notify)
			}
			if _, err := svc.Handler(hs); err != nil {
				t.Fatal(err)
			}
			if hub, notifier := svc.Running(); !hub || !notifier {
				t.Fatalf("with a gateway: hub %v, notifier %v", hub, notifier)
			}
		})
	}
}

// Streams whose cursor is older than the hub's ring read the store (four at a time,
// the others waiting their turn) until the ring holds what follows, then the ring:
// each of ten streams from ?after=0 gets every event once, in order, old and live.
func TestEventsCatchUpFromStore(t *testing.T) {
	defer web.SetRing(8, 1<<20)()
	r := newRig(t, "", web.Options{})
	ctx := context.Background()
	for i := range 60 {
		if _, err := r.eng.Publish(ctx, wire.Event{Event: "test.old", Data: map[string]any{"i": i}}); err != nil {
			t.Fatal(err)
		}
	}
	r.restart() // the hub loads the last 8 events: the first 52 are the store's only
	tok := r.token(webapi.ScopeRead, 0)
	const streams = 10
	ss := make([]*sseReader, streams)
	for i := range ss {
		ss[i] = r.openEvents(tok, "?after=0", nil)
	}
	// More events while they catch up: more than the ring holds, so it moves on.
	for i := range 40 {
		if _, err := r.eng.Publish(ctx, wire.Event{Event: "test.live", Data: map[string]any{"i": i}}); err != nil {
			t.Fatal(err)
		}
	}
	last := r.eng.LastSeq()
	var wg sync.WaitGroup
	errs := make(chan error, streams)
	for i, s := range ss {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for want := uint64(1); want <= last; want++ {
				ev, err := s.next()
				if err != nil {
					errs <- fmt.Errorf("stream %d: after seq %d: %v", i, want-1, err)
					return
				}
				if ev.id != fmt.Sprint(want) {
					errs <- fmt.Errorf("stream %d: event %q (%s), want seq %d", i, ev.id, ev.event, want)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		for _, s := range ss {
			s.close()
		}
		<-done
		t.Error("the streams did not all get every event within 30 s")
	}
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// A cursor past the newest event (a client of another state directory, or of this
// one before it was wiped) starts the stream at the newest event, and its first
// comment says so: the events that follow are not skipped up to the stale cursor.
func TestEventsCursorPastTheNewest(t *testing.T) {
	r := newRig(t, "", web.Options{})
	tok := r.token(webapi.ScopeRead, 0)
	last := r.eng.LastSeq()
	stale := last + 1000
	for _, c := range []struct {
		name   string
		query  string
		header map[string]string
	}{
		{"after", fmt.Sprintf("?after=%d", stale), nil},
		{"Last-Event-ID", "", map[string]string{"Last-Event-ID": fmt.Sprint(stale)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := r.openEvents(tok, c.query, c.header)
			var hello string
			for hello == "" {
				line, err := s.br.ReadString('\n')
				if err != nil {
					t.Fatal(err)
				}
				if h, ok := strings.CutPrefix(line, ": "); ok {
					hello = h
				}
			}
			if !strings.Contains(hello, fmt.Sprintf("cursor %d is past the newest event", stale)) {
				t.Fatalf("first comment %q", hello)
			}
			ev, err := r.eng.Publish(context.Background(), wire.Event{Event: "test.next"})
			if err != nil {
				t.Fatal(err)
			}
			if got := s.nextWithin(t, 5*time.Second); got.id != fmt.Sprint(ev.Seq) {
				t.Fatalf("first event %+v, want seq %d", got, ev.Seq)
			}
			s.close()
		})
	}
}
