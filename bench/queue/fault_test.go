package queue

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"orcr/core/socket"
	"orcr/core/wire"
	"orcr/testutil/apiclient"
	"orcr/testutil/wait"
)

// follower streams events across server restarts, resuming from the last seq it saw,
// and records any gap or repeat in the seqs.
type follower struct {
	mu       sync.Mutex
	last     uint64
	n        int
	problems []string
}

func (f *follower) run(ctx context.Context, sock string) {
	for ctx.Err() == nil {
		cl, err := apiclient.Dial(ctx, sock, "")
		if err != nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		f.mu.Lock()
		after := f.last
		f.mu.Unlock()
		ch, err := cl.Subscribe(ctx, wire.SubscribeParams{After: after})
		if err != nil {
			cl.Close()
			time.Sleep(20 * time.Millisecond)
			continue
		}
		for ev := range ch {
			f.mu.Lock()
			if ev.Seq != f.last+1 {
				f.problems = append(f.problems, fmt.Sprintf("seq %d after %d", ev.Seq, f.last))
			}
			f.last = ev.Seq
			f.n++
			f.mu.Unlock()
		}
		cl.Close()
	}
}

// submit runs n agents through server restarts. A call cut off by a crash is
// ambiguous: the agent is looked up by path before it is submitted again.
func submit(ctx context.Context, sock string, n int, starts string, jobTime time.Duration) (map[string]string, error) {
	ids := map[string]string{} // path → id
	cl, err := apiclient.Dial(ctx, sock, "")
	for err != nil {
		if ctx.Err() != nil {
			return ids, ctx.Err()
		}
		time.Sleep(20 * time.Millisecond)
		cl, err = apiclient.Dial(ctx, sock, "")
	}
	defer cl.Close()
	for i := 0; i < n; {
		path := fmt.Sprintf("fault/j%04d", i)
		a, err := cl.Run(ctx, wire.RunParams{Path: path, Priority: i % 3, Argv: job(starts, jobTime)})
		if err == nil {
			ids[path] = a.ID
			i++
			continue
		}
		if ctx.Err() != nil {
			return ids, ctx.Err()
		}
		if !errors.Is(err, wire.ErrUnavailable) {
			return ids, fmt.Errorf("run %s: %w", path, err)
		}
		// The server went away mid-call: wait for it, then see whether the run landed
		// (a record: it did; not found: submit again).
		var got wire.Agent
		var gerr error
		if !wait.Every(60*time.Second, 20*time.Millisecond, func() bool {
			got, gerr = cl.Get(ctx, path)
			return gerr == nil || errors.Is(gerr, wire.ErrNotFound) || ctx.Err() != nil
		}) {
			return ids, fmt.Errorf("run %s: server not back within %s after %w", path, wait.Scale(60*time.Second), err)
		}
		if ctx.Err() != nil {
			return ids, ctx.Err()
		}
		if gerr == nil {
			ids[path] = got.ID
			i++
		}
	}
	return ids, nil
}

// runFault is the fault run: n agents of jobTime under cap capN while the server is
// killed with SIGKILL kills times at random moments and restarted.
func runFault(t testing.TB, n, capN, kills int, jobTime time.Duration) {
	s := newServer(t, fmt.Sprintf("[limits]\nglobal = %d\n[gc]\nidle_after = \"0\"\n", capN))
	s.start()
	sock := socket.SocketPath(s.home)
	starts := filepath.Join(s.home, "starts.log")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var f follower
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); f.run(ctx, sock) }()
	var ids map[string]string
	var subErr error
	subDone := make(chan struct{})
	go func() {
		defer wg.Done()
		defer close(subDone)
		ids, subErr = submit(ctx, sock, n, starts, jobTime)
	}()
	// Spread the kills over the expected run time.
	span := time.Duration(float64(n)/float64(capN)*float64(jobTime)) + time.Second
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	for k := range kills {
		time.Sleep(time.Duration(rng.Int64N(int64(2*span/time.Duration(kills)))) + 50*time.Millisecond)
		s.kill9()
		s.start()
		t.Logf("kill -9 #%d done", k+1)
	}
	<-subDone
	if subErr != nil {
		t.Fatal(subErr)
	}
	cl := s.dial(ctx)
	defer cl.Close()
	w, err := cl.Wait(ctx, wire.WaitParams{Glob: "fault/**", Until: "exited", TimeoutSeconds: 60 + int(span.Seconds()*5)})
	if err != nil || w.TimedOut {
		t.Fatalf("wait: timed out %v, err %v", w.TimedOut, err)
	}
	all, err := cl.List(ctx, wire.ListParams{Glob: "fault/**", All: true})
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]wire.Agent{}
	for _, a := range all {
		byID[a.ID] = a
	}
	lost := 0
	for path, id := range ids {
		if _, ok := byID[id]; !ok {
			lost++
			t.Errorf("record of %s (%s) lost", path, id)
		}
	}
	if len(ids) != n {
		t.Errorf("submitted %d of %d", len(ids), n)
	}
	twice := 0
	for id, c := range startsLog(t, starts) {
		if c > 1 {
			twice++
			t.Errorf("agent %s (%s) started %d times", byID[id].Path, id, c)
		}
	}
	states := map[wire.State]int{}
	for _, a := range all {
		states[a.State]++
	}
	evs := s.allEvents(ctx)
	// From the event log: an agent is admitted once, or again only after a restart
	// found it admitted but never launched and queued it again.
	admitted, requeued := map[string]int{}, 0
	for _, ev := range evs {
		if ev.Event != wire.EventAgentState || ev.Agent == nil {
			continue
		}
		switch ev.To {
		case wire.StateStarting:
			admitted[ev.Agent.ID]++
			if admitted[ev.Agent.ID] > 1 {
				t.Errorf("agent %s admitted again without being queued again", byID[ev.Agent.ID].Path)
			}
		case wire.StateQueued:
			admitted[ev.Agent.ID]--
			requeued++
		}
	}
	cancel()
	wg.Wait()
	f.mu.Lock()
	for _, p := range f.problems {
		t.Errorf("event stream across restarts: %s", p)
	}
	t.Logf("%s host: %d agents, cap %d, %d kill -9 restarts: %d records lost, %d started twice, %d admitted-not-launched queued again; end states %v; %d events streamed across restarts without gaps",
		s.host, n, capN, kills, lost, twice, requeued, states, f.n)
	f.mu.Unlock()
}

// TestFaultKill9 is the CI-sized fault run (ORCR_LONG=1: 500 agents, 20 kills).
func TestFaultKill9(t *testing.T) {
	n, capN, kills := 60, 10, 3
	if long() {
		n, capN, kills = 500, 20, 20
	}
	runFault(t, n, capN, kills, 300*time.Millisecond)
}
