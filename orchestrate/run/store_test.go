package run

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"orcr/core/wire"
	"orcr/store"
)

func openStore(t *testing.T, dir string) *store.Store {
	t.Helper()
	st, err := store.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestRunsLogAndRecordInTheRealStore(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := openStore(t, dir)
	rs := NewRuns(st)
	r := newRun(t, 2, false, "M1::small", "M2:M1:small")
	_, initial, _ := Step(r, Fact{Kind: FTick}, t0) // nothing: just a valid action list
	rec, err := rs.Create(ctx, Record{Run: r, Repo: "/repo", Check: "true"}, append(initial, Action{Kind: ALead, M: "M1", Text: "M1 is ready"}, Action{Kind: ANotify, Text: "run demo started"}), t0)
	if err != nil {
		t.Fatal(err)
	}
	// The lead's entry is a record of the step (Step put it in the inbox): only the
	// notification is a side effect to perform.
	if len(rec.Outbox) != 1 || rec.Outbox[0].Action.Kind != ANotify || rec.Seq != 1 {
		t.Fatalf("created %+v", rec)
	}
	if _, err := rs.Create(ctx, Record{Run: r}, nil, t0); !errors.Is(err, ErrRunExists) {
		t.Fatalf("second create: %v", err)
	}
	// Performing the notification is recorded as done.
	rec, err = rs.Did(ctx, "demo", rec.Outbox[0], "", t0)
	if err != nil || len(rec.Outbox) != 0 {
		t.Fatalf("did: %v %+v", err, rec.Outbox)
	}
	// Doing it twice (a restart re-performed it) records nothing more.
	if rec2, _ := rs.Did(ctx, "demo", Pending{Seq: 1, I: 1}, "", t0); rec2.Seq != rec.Seq {
		t.Fatal("second did logged")
	}
	rec, added, err := rs.Apply(ctx, "demo", Fact{Kind: FDispatch, M: "M1"}, t0.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if len(added) != 1 || added[0].Action.Kind != ABrief || added[0].Seq != 3 {
		t.Fatalf("added %+v", added)
	}
	if _, _, err := rs.Apply(ctx, "demo", Fact{Kind: FDispatch, M: "M2"}, t0.Add(2*time.Second)); !errors.Is(err, ErrRefused) {
		t.Fatalf("refused dispatch: %v", err)
	}
	// A crash between the log append and the record write: the entry (the fact
	// and the actions Step asked for) is replayed.
	done := Fact{Kind: FDone, M: "M1", Coder: "coder-1", Commits: 1, Head: "abc"}
	_, acts, err := Step(rec.Run, done, t0.Add(3*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := rs.append(ctx, "demo", Entry{Seq: 5, At: t0.Add(3 * time.Second), Type: EntryFact,
		Fact: &done, Actions: acts}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	st = openStore(t, dir)
	defer st.Close()
	rs = NewRuns(st)
	rec, err = rs.Get(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := rec.Run.Milestone("M1"); m.State != Checking || m.Head != "abc" || rec.Seq != 5 {
		t.Fatalf("replayed %+v seq %d", m, rec.Seq)
	}
	if n := len(rec.Outbox); n != 2 || rec.Outbox[1].Action.Kind != ACheck {
		t.Fatalf("outbox after replay %+v", rec.Outbox)
	}
	evs, err := rs.Events(ctx, "demo", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, e := range evs {
		types = append(types, e.Type)
	}
	if got := strings.Join(types, " "); got != "start did fact refused fact" {
		t.Fatalf("log %s", got)
	}
	if evs[3].Text == "" || !strings.Contains(evs[3].Text, "waits for M1") {
		t.Fatalf("refusal text %q", evs[3].Text)
	}
	if tail, _ := rs.Events(ctx, "demo", 3, 1); len(tail) != 1 || tail[0].Seq != 4 {
		t.Fatalf("after 3, limit 1: %+v", tail)
	}
	// Update keeps the machine's part.
	rec, err = rs.Update(ctx, "demo", func(r *Record) { r.Agents = map[string]string{"coder-1": "id1"}; r.Seq = 99; r.Run.Name = "x" })
	if err != nil || rec.Seq != 5 || rec.Run.Name != "demo" || rec.Agents["coder-1"] != "id1" {
		t.Fatalf("update %v %+v", err, rec)
	}
	if list, err := rs.List(ctx); err != nil || len(list) != 1 {
		t.Fatalf("list %v %d", err, len(list))
	}
	// A turn end is handled in the write that logs it, also when a crash left the
	// entry for the replay: the follower and Reconcile never feed it twice.
	turnAt := t0.Add(4 * time.Second)
	if err := rs.append(ctx, "demo", Entry{Seq: 6, At: turnAt, Type: EntryFact,
		Fact: &Fact{Kind: FTurnEnded, M: "M1", Coder: "coder-1", TurnAt: turnAt}}); err != nil {
		t.Fatal(err)
	}
	rs = NewRuns(st) // the server restarted
	if rec, err = rs.Get(ctx, "demo"); err != nil || !rec.Turns["coder-1"].Equal(turnAt) || rec.Seq != 6 {
		t.Fatalf("turn end replayed: %v turns %v seq %d", err, rec.Turns, rec.Seq)
	}
	if err := rs.Delete(ctx, "demo"); err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Get(ctx, "demo"); !errors.Is(err, wire.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
	if evs, _ := rs.Events(ctx, "demo", 0, 0); len(evs) != 0 {
		t.Fatalf("log left: %d", len(evs))
	}
}

func TestReconcile(t *testing.T) {
	g := newRig(t, 2, false, "A::small", "B::small", "C::small")
	g.build("A", "a1")
	g.step(Fact{Kind: FChecked, M: "A", Head: "a1", OK: true})
	g.step(Fact{Kind: FMergedIn, M: "A", Head: "a1"}) // advance pending
	g.step(Fact{Kind: FDispatch, M: "B"})
	g.step(Fact{Kind: FDispatch, M: "C"})
	rec := Record{Run: g.r}
	bCoder, cCoder := g.m("B").Coder, g.m("C").Coder
	turnAt := g.now
	o := Observed{
		Feature:  "sq1",
		Advance:  "sq1",
		Branches: map[string]string{"A": "a1", "B": "b0", "C": "c0"},
		Agents: map[string]AgentSeen{
			bCoder: {Exists: true, Live: true, Idle: true, TurnAt: turnAt},
		},
	}
	got := Reconcile(rec, o, map[string]time.Time{})
	want := []Fact{
		{Kind: FAdvanced, M: "A", Head: "sq1"},
		{Kind: FTurnEnded, M: "B", Coder: bCoder},
		{Kind: FLost, Coder: cCoder},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i].Kind != want[i].Kind || got[i].M != want[i].M || got[i].Coder != want[i].Coder || got[i].Head != want[i].Head {
			t.Fatalf("fact %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// The turn end was handled already: not again.
	if got := Reconcile(rec, o, map[string]time.Time{bCoder: turnAt}); len(got) != 2 {
		t.Fatalf("handled turn fed again: %+v", got)
	}
	// Killed between C's dispatch and its coder's spawn: the brief is still to do,
	// so C's coder (not recorded yet, maybe not started) is not lost — the brief
	// starts it or finds the one started.
	briefed := rec
	briefed.Outbox = []Pending{{Seq: 9, Action: Action{Kind: ABrief, M: "C", Coder: cCoder}}}
	if got := Reconcile(briefed, o, map[string]time.Time{bCoder: turnAt}); len(got) != 1 || got[0].Kind != FAdvanced {
		t.Fatalf("a coder whose brief is pending taken for lost: %+v", got)
	}
	// Moved by hand while the merge was under way; a branch deleted.
	o.Feature, o.Advance = "hand", "sq1"
	delete(o.Branches, "B")
	got = Reconcile(rec, o, nil)
	if got[0].Kind != FMoved || got[0].Head != "hand" || got[1].Kind != FHold || got[1].M != "B" || !strings.Contains(got[1].Text, "orcr/demo/B") {
		t.Fatalf("got %+v", got)
	}
	// Feature branch gone: every open milestone is held with the reason.
	o.Feature = ""
	got = Reconcile(rec, o, nil)
	if len(got) != 3 || got[0].Kind != FHold || !strings.Contains(got[0].Text, "feature/demo does not exist") {
		t.Fatalf("got %+v", got)
	}
	// Feeding them gives a consistent run.
	for _, f := range got {
		r, _, err := Step(g.r, f, g.now)
		if err != nil {
			t.Fatal(err)
		}
		g.r = r
	}
	for _, m := range g.r.Milestones {
		if m.State != Held {
			t.Fatalf("%s is %s", m.ID, m.State)
		}
	}
}

// scanCounter is the real store, counting the scans of each bucket: how a test sees
// that applying a fact does not read the whole run log.
type scanCounter struct {
	*store.Store
	scans map[string]int
}

func (s *scanCounter) Scan(ctx context.Context, bucket string, fn func(string, []byte) bool) error {
	s.scans[bucket]++
	return s.Store.Scan(ctx, bucket, fn)
}

// TestApplyReadsOnlyWhatIsNew: with a long log, applying a fact and getting the
// record read the entries after the record's seq by key and never scan the log (a
// scan per fact made a long dispatch quadratic: minutes for 100,000 names). A log
// entry left by a crash is still replayed.
func TestApplyReadsOnlyWhatIsNew(t *testing.T) {
	ctx := context.Background()
	st := &scanCounter{Store: openStore(t, t.TempDir()), scans: map[string]int{}}
	defer st.Close()
	rs := NewRuns(st)
	r := newRun(t, 2, false, "M1::small", "M2:M1:small")
	if _, err := rs.Create(ctx, Record{Run: r, Repo: "/repo", Check: "true"}, nil, t0); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		if _, _, err := rs.Apply(ctx, "demo", Fact{Kind: FTick}, t0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if n := st.scans[logPrefix+"demo"]; n != 0 {
		t.Fatalf("300 applies scanned the run log %d times", n)
	}
	rec, err := rs.Get(ctx, "demo")
	if err != nil || rec.Seq != 301 {
		t.Fatalf("get: %v seq %d", err, rec.Seq)
	}
	if err := rs.append(ctx, "demo", Entry{Seq: 302, At: t0, Type: EntryFact, Fact: &Fact{Kind: FHold, M: "M1", Text: "crash"}}); err != nil {
		t.Fatal(err)
	}
	rs = NewRuns(st) // the server restarted
	rec, err = rs.Get(ctx, "demo")
	if m, _ := rec.Run.Milestone("M1"); err != nil || rec.Seq != 302 || m.State != Held {
		t.Fatalf("replay: %v seq %d M1 %s", err, rec.Seq, m.State)
	}
	if n := st.scans[logPrefix+"demo"]; n != 0 {
		t.Fatalf("get scanned the run log %d times", n)
	}
}

// TestSameRefusalLoggedOnce: a request refused again while the run has not changed
// is not logged again (a loop asking for the same dispatch grew the log by one
// entry per ask); a different refusal is, and so is the same one once the run moved.
func TestSameRefusalLoggedOnce(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, t.TempDir())
	defer st.Close()
	rs := NewRuns(st)
	r := newRun(t, 2, false, "M1::small", "M2:M1:small")
	if _, err := rs.Create(ctx, Record{Run: r, Repo: "/repo", Check: "true"}, nil, t0); err != nil {
		t.Fatal(err)
	}
	refused := func() int {
		es, err := rs.Events(ctx, "demo", 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range es {
			if e.Type == EntryRefused {
				n++
			}
		}
		return n
	}
	for range 50 {
		if _, _, err := rs.Apply(ctx, "demo", Fact{Kind: FDispatch, M: "M2"}, t0); !errors.Is(err, ErrRefused) {
			t.Fatalf("dispatch of planned M2: %v", err)
		}
	}
	if n := refused(); n != 1 {
		t.Fatalf("50 identical refusals logged %d times, want once", n)
	}
	// Another refusal is logged, and the first is still remembered after it.
	if _, _, err := rs.Apply(ctx, "demo", Fact{Kind: FAnswer, M: "M1", Text: "x"}, t0); err == nil {
		t.Fatal("answer for a milestone that is not asking accepted")
	}
	rs.Apply(ctx, "demo", Fact{Kind: FDispatch, M: "M2"}, t0)
	if n := refused(); n != 2 {
		t.Fatalf("refusals logged %d times, want 2", n)
	}
	// The run moved: the same request is refused anew and logged anew.
	if _, _, err := rs.Apply(ctx, "demo", Fact{Kind: FDispatch, M: "M1"}, t0); err != nil {
		t.Fatal(err)
	}
	rs.Apply(ctx, "demo", Fact{Kind: FDispatch, M: "M2"}, t0)
	if n := refused(); n != 3 {
		t.Fatalf("refusals logged %d times after the run moved, want 3", n)
	}
}

// TestOldRecordKeepsItsLead: a record written before the lead's inbox moved into the
// run keeps its lead and what waited in the inbox.
func TestOldRecordKeepsItsLead(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, t.TempDir())
	defer st.Close()
	r := newRun(t, 1, false, "M1::small")
	b := []byte(`{"v":1,"rec":{"run":` + string(mustJSON(t, r)) + `,"lead":"claude","inbox":["M1 is ready"],"leadSent":{"n":1,"tries":2}}}`)
	if err := st.Put(ctx, RunsBucket, "demo", b); err != nil {
		t.Fatal(err)
	}
	rec, err := NewRuns(st).Get(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	if !rec.Run.Lead || len(rec.Run.Inbox) != 1 || rec.Run.LeadSent == nil || rec.Run.LeadSent.Tries != 2 {
		t.Fatalf("old record: lead %v inbox %q sent %+v", rec.Run.Lead, rec.Run.Inbox, rec.Run.LeadSent)
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestDidRowsSayWhat: a "did" row of the log says whose action it was and what it
// did — "did lead" rows carried no text, so the log did not say what the lead was told.
func TestDidRowsSayWhat(t *testing.T) {
	ctx := context.Background()
	rs := NewRuns(openStore(t, t.TempDir()))
	r := newRun(t, 1, false, "M1::small")
	rec, err := rs.Create(ctx, Record{Run: r, Repo: "/repo", Check: "true"},
		[]Action{{Kind: ADeliver, Text: "M1 is ready: dispatch it\nwith more"}, {Kind: ASendCoder, M: "M1", Coder: "coder-1", Text: "The check failed for M1."}}, t0)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range rec.Outbox {
		if _, err := rs.Did(ctx, "demo", p, "", t0); err != nil {
			t.Fatal(err)
		}
	}
	es, err := rs.Events(ctx, "demo", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range es {
		if v := entryView(e); v.Type == EntryDid {
			got = append(got, v.Kind+" "+v.M+" "+v.Text)
		}
	}
	want := []string{"deliver  to the lead: M1 is ready: dispatch it", "send-coder M1 to coder-1: The check failed for M1."}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("did rows %q, want %q", got, want)
	}
}
