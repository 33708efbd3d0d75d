package run

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"orcr/cli"
	"orcr/core/socket"
	"orcr/core/wire"
	runapi "orcr/orchestrate/run/api"
	"orcr/store"
)

// ScanFrom counts the seeking scans too, so TestApplyReadsOnlyWhatIsNew sees every
// read of the log.
func (s *scanCounter) ScanFrom(ctx context.Context, bucket, from string, fn func(string, []byte) bool) error {
	s.scans[bucket]++
	return s.Store.ScanFrom(ctx, bucket, from, fn)
}

// readCounter is the real store counting the values its scans hand out: what a
// run.events page costs in reads and decodes.
type readCounter struct {
	*store.Store
	read int
}

func (s *readCounter) Scan(ctx context.Context, bucket string, fn func(string, []byte) bool) error {
	return s.ScanFrom(ctx, bucket, "", fn)
}

func (s *readCounter) ScanFrom(ctx context.Context, bucket, from string, fn func(string, []byte) bool) error {
	return s.Store.ScanFrom(ctx, bucket, from, func(k string, v []byte) bool {
		s.read++
		return fn(k, v)
	})
}

// eventsRig is a run whose log holds n entries, served over the in-process socket.
func eventsRig(t testing.TB, n int) (*readCounter, wire.Transport) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	rc := &readCounter{Store: st}
	rs := NewRuns(rc)
	r := newRun(t, 1, false, "M1::small")
	rec, err := rs.Create(ctx, Record{Run: r, Repo: "/repo", Check: "true"}, nil, t0)
	if err != nil {
		t.Fatal(err)
	}
	for seq := rec.Seq + 1; seq <= uint64(n); seq++ {
		if err := rs.append(ctx, "demo", Entry{Seq: seq, At: t0, Type: EntryFact, Fact: &Fact{Kind: FTick}, Text: fmt.Sprint("tick ", seq)}); err != nil {
			t.Fatal(err)
		}
	}
	ip, err := socket.NewInProcess((&Service{runs: rs}).Methods())
	if err != nil {
		t.Fatal(err)
	}
	return rc, ip
}

// TestRunEventsPages: run.events with a limit answers one page and the cursor of the
// next; following next reads the whole log once, in order, and the last page has no
// next. A page deep in a 10,000-entry log reads about as many stored values as it
// holds, not every entry before it (the log scan seeks to the cursor), and no limit
// still answers the whole log as before.
func TestRunEventsPages(t *testing.T) {
	ctx := context.Background()
	const n, limit = 10000, 1000
	rc, tr := eventsRig(t, n)

	var seen uint64
	var after uint64
	pages := 0
	for {
		r, err := wire.Call(ctx, tr, runapi.RunEventsM, runapi.RunEventsParams{Name: "demo", After: after, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if len(r.Entries) > limit {
			t.Fatalf("page %d holds %d entries, over the limit %d", pages, len(r.Entries), limit)
		}
		for _, e := range r.Entries {
			if e.Seq != seen+1 {
				t.Fatalf("page %d: seq %d after %d", pages, e.Seq, seen)
			}
			seen = e.Seq
		}
		if r.Next == 0 {
			break
		}
		if r.Next != seen {
			t.Fatalf("page %d: next %d, last entry %d", pages, r.Next, seen)
		}
		after = r.Next
	}
	if seen != n || pages != n/limit {
		t.Fatalf("read %d entries in %d pages, want %d in %d", seen, pages, n, n/limit)
	}

	// A page near the end of the log costs its own entries (plus the one that says
	// another follows), however many come before it.
	rc.read = 0
	r, err := wire.Call(ctx, tr, runapi.RunEventsM, runapi.RunEventsParams{Name: "demo", After: n - 2*limit, Limit: limit})
	if err != nil || len(r.Entries) != limit {
		t.Fatalf("deep page: %v, %d entries", err, len(r.Entries))
	}
	if rc.read > limit+1 {
		t.Fatalf("a page of %d entries after seq %d read %d stored entries: the scan did not seek to the cursor", limit, n-2*limit, rc.read)
	}

	// No limit: the whole log in one answer and no next, as before paging.
	all, err := wire.Call(ctx, tr, runapi.RunEventsM, runapi.RunEventsParams{Name: "demo"})
	if err != nil || len(all.Entries) != n || all.Next != 0 {
		t.Fatalf("no limit: %v, %d entries, next %d", err, len(all.Entries), all.Next)
	}
}

// BenchmarkRunEventsPage is the cost of the last page of a log of 1,000 and of
// 10,000 entries: the same, since the page is read from its cursor.
func BenchmarkRunEventsPage(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			_, tr := eventsRig(b, n)
			ctx := context.Background()
			p := runapi.RunEventsParams{Name: "demo", After: uint64(n - 100), Limit: 100}
			b.ResetTimer()
			for range b.N {
				if _, err := wire.Call(ctx, tr, runapi.RunEventsM, p); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// callCounter is the real in-process transport counting run.events calls.
type callCounter struct {
	wire.Transport
	calls int
}

func (c *callCounter) Call(ctx context.Context, method string, params, result any) error {
	if method == runapi.MethodRunEvents {
		c.calls++
	}
	return c.Transport.Call(ctx, method, params, result)
}

// TestRunEventsCLIPages: `orcr run events` over a log of 2,500 entries asks for it a
// page at a time and prints every entry once, in order; --after starts later and
// --json gathers the pages into one answer.
func TestRunEventsCLIPages(t *testing.T) {
	const n = 2500
	_, tr := eventsRig(t, n)
	run := func(args ...string) (string, int) {
		ct := &callCounter{Transport: tr}
		var out, errb bytes.Buffer
		o := cli.Options{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb,
			Connect: func(context.Context) (wire.Transport, error) { return ct, nil }}
		if code := cli.Run(context.Background(), append([]string{"orcr", "run", "events"}, args...), o); code != 0 {
			t.Fatalf("run events %v: exit %d %s", args, code, errb.String())
		}
		return out.String(), ct.calls
	}
	seqs := func(out string) []string {
		var s []string
		for _, l := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
			s = append(s, strings.Fields(l)[0])
		}
		return s
	}
	out, calls := run("demo")
	got := seqs(out)
	if calls < 3 || len(got) != n || got[0] != "1" || got[n-1] != fmt.Sprint(n) {
		t.Fatalf("%d calls, %d lines (%s … %s); want pages and %d lines", calls, len(got), got[0], got[len(got)-1], n)
	}
	for i, s := range got {
		if s != fmt.Sprint(i+1) {
			t.Fatalf("line %d is seq %s", i+1, s)
		}
	}
	if out, _ := run("--after", "2000", "demo"); len(seqs(out)) != n-2000 || seqs(out)[0] != "2001" {
		t.Fatalf("--after 2000: %d lines from %s", len(seqs(out)), seqs(out)[0])
	}
	out, calls = run("--json", "demo")
	var r runapi.RunEventsResult
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Entries) != n || r.Next != 0 || calls < 3 {
		t.Fatalf("--json: %v, %d entries, next %d, %d calls", err, len(r.Entries), r.Next, calls)
	}
}
