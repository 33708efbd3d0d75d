package run

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// TestRunFromBeforeTheSharedLogGoesOn: a run's record and log as the run store
// wrote them before runs moved onto internal/outbox (testdata, written by that
// code: a start, a did, a dispatch, a refusal, agent ids set by Update, and a fact
// logged by a server killed before its record write) load under this one: the
// killed server's fact is replayed, the outbox is what it was, the log reads as
// before, and the run goes on, its record still written in the layout an older
// orcr reads.
func TestRunFromBeforeTheSharedLogGoesOn(t *testing.T) {
	ctx := context.Background()
	raw, err := os.ReadFile("testdata/run-before-outbox.json")
	if err != nil {
		t.Fatal(err)
	}
	var buckets map[string]map[string]json.RawMessage
	if err := json.Unmarshal(raw, &buckets); err != nil {
		t.Fatal(err)
	}
	st := openStore(t, t.TempDir())
	defer st.Close()
	for b, kv := range buckets {
		for k, v := range kv {
			if err := st.Put(ctx, b, k, v); err != nil {
				t.Fatal(err)
			}
		}
	}
	rs := NewRuns(st)
	rec, err := rs.Get(ctx, "demo")
	if err != nil {
		t.Fatal(err)
	}
	m1, _ := rec.Run.Milestone("M1")
	if rec.Seq != 5 || m1.State != Checking || m1.Head != "abc" || rec.Agents["coder-1"] != "a1" || rec.Repo != "/repo" {
		t.Fatalf("loaded seq %d M1 %s@%s agents %v repo %q", rec.Seq, m1.State, m1.Head, rec.Agents, rec.Repo)
	}
	var refs []string
	for _, p := range rec.Outbox {
		refs = append(refs, p.Ref()+":"+string(p.Action.Kind))
	}
	if got := strings.Join(refs, " "); got != "3.0:brief 5.0:check" {
		t.Fatalf("outbox %s", got)
	}
	evs, err := rs.Events(ctx, "demo", 0, 0)
	if err != nil || len(evs) != 5 {
		t.Fatalf("events %v %d", err, len(evs))
	}
	if e := evs[1]; e.Type != EntryDid || e.Kind != "notify" || e.What != "run demo started" || e.Ref != "1.0" {
		t.Fatalf("did entry %+v", e)
	}
	if e := evs[3]; e.Type != EntryRefused || e.Text == "" {
		t.Fatalf("refused entry %+v", e)
	}
	// It goes on: the brief performed, the check passes.
	if _, err := rs.Did(ctx, "demo", rec.Outbox[0], "", t0.Add(4*time.Second)); err != nil {
		t.Fatal(err)
	}
	rec, _, err = rs.Apply(ctx, "demo", Fact{Kind: FChecked, M: "M1", Head: "abc", OK: true}, t0.Add(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if m1, _ = rec.Run.Milestone("M1"); m1.State != Merging || rec.Seq != 7 {
		t.Fatalf("went on to %s seq %d", m1.State, rec.Seq)
	}
	// The record is in the layout it had: the flat record in a version-1 envelope.
	b, err := st.Get(ctx, RunsBucket, "demo")
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		V   int             `json:"v"`
		Rec json.RawMessage `json:"rec"`
	}
	var flat map[string]json.RawMessage
	if err := json.Unmarshal(b, &env); err != nil || env.V != 1 || json.Unmarshal(env.Rec, &flat) != nil {
		t.Fatalf("stored %s", b)
	}
	for _, k := range []string{"run", "repo", "seq", "outbox", "agents"} {
		if _, ok := flat[k]; !ok {
			t.Fatalf("stored record lacks %q: %s", k, b)
		}
	}
	if string(flat["seq"]) != "7" {
		t.Fatalf("stored seq %s", flat["seq"])
	}
}
