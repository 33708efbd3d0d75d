package roles

import (
	"context"
	"strings"
	"testing"
	"time"

	roleapi "orcr/roles/api"
)

// TestHistoryPages: history.list in pages of a limit walks the same entries, in the
// same order, as one whole answer; the cursor holds when newer agents finish between
// pages and when the entry it names is pruned; text pages make one aligned table.
func TestHistoryPages(t *testing.T) {
	ctx := context.Background()
	as := finished(250)
	old := time.Now().Add(-40 * 24 * time.Hour) // a wider ENDED ("40d ago") at the end
	as[249].EndedAt = &old
	k := listKernel{agents: as}
	whole, err := HistoryOf(ctx, k, roleapi.AgentHistoryParams{})
	if err != nil {
		t.Fatal(err)
	}
	var x histIndex
	x.load(as)
	ask := func(p roleapi.AgentHistoryParams) roleapi.AgentHistoryResult {
		t.Helper()
		q, err := historyQuery(ctx, k, p)
		if err != nil {
			t.Fatal(err)
		}
		return q.result(x.match(q))
	}
	var ids []string
	pages := 0
	for p := (roleapi.AgentHistoryParams{Limit: 40}); ; {
		r := ask(p)
		if len(r.Entries) > 40 {
			t.Fatalf("a page of %d entries for a limit of 40", len(r.Entries))
		}
		for _, e := range r.Entries {
			ids = append(ids, e.ID)
		}
		pages++
		if pages == 2 {
			// Between pages: an agent finishes (it sorts first, before the cursor) and
			// the entry the cursor names is pruned.
			now := time.Now()
			x.put(roleapi.AgentHistoryEntry{ID: "new", Path: "late", EndedAt: now})
			_, id, _ := strings.Cut(r.Next, " ")
			x.remove(id)
			ids = ids[:len(ids)-1] // it is not listed by the whole answer either, below
		}
		if r.Next == "" {
			break
		}
		p.After = r.Next
	}
	var want []string
	for _, e := range whole.Entries {
		want = append(want, e.ID)
	}
	want = append(want[:79], want[80:]...) // the pruned one
	if pages != 7 || strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Fatalf("%d pages; paged ids differ from the whole answer:\n%v\n%v", pages, ids, want)
	}

	// Text pages: the header once, every column starting where the header's does.
	var text strings.Builder
	for p := (roleapi.AgentHistoryParams{Text: true, Limit: 60, Glob: "review/**"}); ; {
		r := ask(p)
		text.WriteString(r.Text)
		if r.Next == "" {
			break
		}
		p.After = r.Next
	}
	lines := strings.Split(strings.TrimSuffix(text.String(), "\n"), "\n")
	if len(lines) != 250 || strings.Count(text.String(), "ENDED") != 1 {
		t.Fatalf("%d lines, %d headers:\n%.400s", len(lines), strings.Count(text.String(), "ENDED"), text.String())
	}
	var starts []int
	for _, c := range roleapi.HistoryColumns[1:] {
		starts = append(starts, strings.Index(lines[0], c))
	}
	for _, l := range lines[1:] {
		for _, s := range starts {
			if len(l) <= s || l[s-1] != ' ' || l[s] == ' ' {
				t.Fatalf("row not aligned with the header at %d:\n%s\n%s", s, lines[0], l)
			}
		}
	}
	if _, err := historyQuery(ctx, k, roleapi.AgentHistoryParams{After: "nonsense"}); err == nil {
		t.Fatal("a cursor that is not one was taken")
	}
}
