package listen

import (
	"context"
	"testing"
	"time"
)

func TestRecordsPruneAndRemove(t *testing.T) {
	ctx := context.Background()
	rec := NewRecords(newMemStore())
	t0 := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i, name := range []string{"a", "ab"} { // "ab" shares a's prefix but not "a/"
		for d := range 5 {
			id := string(rune('p' + d))
			if err := rec.MarkProcessed(ctx, name, id, Processed{At: t0.Add(time.Duration(d) * 24 * time.Hour), Target: "x"}); err != nil {
				t.Fatal(err)
			}
		}
		if err := rec.PutState(ctx, name, State{Fires: i + 1, Cursor: Cursor{"o/r": "5"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.BeginDispatch(ctx, "a", Dispatch{Event: Event{ID: "q"}, Target: "x", At: t0}); err != nil {
		t.Fatal(err)
	}
	n, err := rec.PruneProcessed(ctx, "a", t0.Add(3*24*time.Hour))
	if err != nil || n != 3 {
		t.Fatalf("pruned %d %v", n, err)
	}
	if done, _ := rec.IsProcessed(ctx, "a", "p"); done {
		t.Fatal("an old id survived the prune")
	}
	if done, _ := rec.IsProcessed(ctx, "a", "t"); !done {
		t.Fatal("a recent id was pruned")
	}
	if done, _ := rec.IsProcessed(ctx, "ab", "p"); !done {
		t.Fatal("pruning a touched ab")
	}
	if err := rec.Remove(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	st, _ := rec.State(ctx, "a")
	pend, _ := rec.PendingDispatches(ctx, "a")
	if st.Fires != 0 || len(pend) != 0 {
		t.Fatalf("after remove: %+v, %d pending", st, len(pend))
	}
	if st, _ := rec.State(ctx, "ab"); st.Fires != 2 || st.Cursor["o/r"] != "5" {
		t.Fatalf("removing a touched ab: %+v", st)
	}
	if done, _ := rec.IsProcessed(ctx, "a", "t"); done {
		t.Fatal("processed ids survived the remove")
	}
}
