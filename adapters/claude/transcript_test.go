package claude

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orcr/adapters/internal/jsonl"
	"orcr/adapters/prices"
)

func parseFile(t testing.TB, path string) *Transcript {
	t.Helper()
	tr := NewTranscript()
	tl := &jsonl.Tail{Path: path}
	if _, err := tl.Read(context.Background(), tr.Add); err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestTranscriptDedupesPerMessageID(t *testing.T) {
	tr := parseFile(t, "testdata/session.jsonl")
	got := tr.ByModel()
	// msg_1 appears twice (one line per block, the first with a partial output count),
	// msg_2 twice with equal usage; the sidechain message counts once as spend.
	want := map[string]prices.Tokens{
		"claude-sonnet-4-5": {Input: 32, Output: 75, CacheRead: 18800, CacheWrite5m: 800},
		"claude-haiku-4-5":  {Input: 100, Output: 10},
	}
	if len(got) != len(want) {
		t.Fatalf("models %v", got)
	}
	for m, w := range want {
		if got[m] != w {
			t.Errorf("%s: got %+v want %+v", m, got[m], w)
		}
	}
	if tr.LastMessage != "The auth module looks fine.\nOne nit: rotate the key." {
		t.Errorf("last message %q", tr.LastMessage)
	}
	if tr.Model != "claude-sonnet-4-5" || tr.SessionID != "3f2a0000-0000-4000-8000-000000000001" {
		t.Errorf("model %q session %q", tr.Model, tr.SessionID)
	}
	if tr.Bad != 1 {
		t.Errorf("bad lines %d, want 1", tr.Bad)
	}
	if tr.Limit == nil || tr.Limit.ResetsAt == nil {
		t.Fatalf("limit not seen: %+v", tr.Limit)
	}
	loc, _ := time.LoadLocation("Asia/Saigon")
	if r := tr.Limit.ResetsAt.In(loc); r.Hour() != 21 || r.Minute() != 50 {
		t.Errorf("reset %v", r)
	}
	if !tr.TurnOpen || tr.TurnEnded != 1 {
		t.Errorf("turn open %v ended %d", tr.TurnOpen, tr.TurnEnded)
	}
}

func TestTranscriptIncrementalEqualsWhole(t *testing.T) {
	data, _ := os.ReadFile("testdata/session.jsonl")
	p := filepath.Join(t.TempDir(), "s.jsonl")
	f, _ := os.Create(p)
	tr := NewTranscript()
	tl := &jsonl.Tail{Path: p}
	// Write the file in odd-sized pieces, tearing lines, and poll after each.
	for i := 0; i < len(data); i += 37 {
		f.Write(data[i:min(i+37, len(data))])
		if _, err := tl.Read(context.Background(), tr.Add); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	whole := parseFile(t, "testdata/session.jsonl")
	if fmt.Sprint(tr.ByModel()) != fmt.Sprint(whole.ByModel()) || tr.LastMessage != whole.LastMessage || tr.Bad != whole.Bad {
		t.Fatalf("incremental %v %q bad %d, whole %v %q bad %d", tr.ByModel(), tr.LastMessage, tr.Bad,
			whole.ByModel(), whole.LastMessage, whole.Bad)
	}
}

func TestTranscriptHugeToolResultLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.jsonl")
	big := strings.Repeat("x", 6<<20)
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":%q}]}}`+"\n", big)
	fmt.Fprintf(&b, `{"type":"assistant","message":{"id":"m","model":"claude-opus-4-6","content":[{"type":"text","text":"after"}],"usage":{"input_tokens":1,"output_tokens":2}}}`+"\n")
	os.WriteFile(p, b.Bytes(), 0o644)
	tr := parseFile(t, p)
	if tr.LastMessage != "after" || tr.ByModel()["claude-opus-4-6"].Output != 2 {
		t.Fatalf("after huge line: %q %v", tr.LastMessage, tr.ByModel())
	}
}

// writeBigTranscript writes about size bytes of realistic transcript: per turn a user
// prompt, an attachment, a large tool result and two assistant lines per message.
func writeBigTranscript(tb testing.TB, path string, size int) int {
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriterSize(f, 1<<20)
	result := strings.Repeat("lorem ipsum dolor sit amet ", 400)
	n, lines := 0, 0
	for i := 0; n < size; i++ {
		for _, l := range []string{
			fmt.Sprintf(`{"parentUuid":"p%d","isSidechain":false,"type":"user","message":{"role":"user","content":"prompt %d"},"uuid":"u%d","timestamp":"2026-11-30T22:58:29.151Z","cwd":"/w/app","sessionId":"s","version":"2.1.328"}`, i, i, i),
			fmt.Sprintf(`{"parentUuid":"u%d","isSidechain":false,"attachment":{"type":"date","date":"2026-11-30"},"type":"attachment","uuid":"a%d","sessionId":"s"}`, i, i),
			fmt.Sprintf(`{"parentUuid":"a%d","isSidechain":false,"type":"assistant","uuid":"b%d","requestId":"r%d","sessionId":"s","message":{"id":"msg_%d","model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"text","text":"Reading it"}],"usage":{"input_tokens":12,"output_tokens":1,"cache_read_input_tokens":9000,"cache_creation_input_tokens":800}}}`, i, i, i, i),
			fmt.Sprintf(`{"parentUuid":"b%d","isSidechain":false,"type":"assistant","uuid":"c%d","requestId":"r%d","sessionId":"s","message":{"id":"msg_%d","model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"tool_use","id":"t%d","name":"Read","input":{"file_path":"a.go"}}],"usage":{"input_tokens":12,"output_tokens":45,"cache_read_input_tokens":9000,"cache_creation_input_tokens":800}}}`, i, i, i, i, i),
			fmt.Sprintf(`{"parentUuid":"c%d","isSidechain":false,"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":%q}]},"uuid":"d%d","sessionId":"s"}`, i, i, result, i),
		} {
			w.WriteString(l)
			w.WriteByte('\n')
			n += len(l) + 1
			lines++
		}
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	return lines
}

func TestBigTranscriptCounts(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.jsonl")
	lines := writeBigTranscript(t, p, 2<<20)
	tr := parseFile(t, p)
	turns := int64(lines / 5)
	if got := tr.ByModel()["claude-sonnet-4-5"]; got.Output != 45*turns || got.Input != 12*turns {
		t.Fatalf("%d turns: %+v", turns, got)
	}
}

// BenchmarkParse50MB parses a 50 MB transcript from scratch (target ≤ 1 s).
func BenchmarkParse50MB(b *testing.B) {
	p := filepath.Join(b.TempDir(), "big.jsonl")
	writeBigTranscript(b, p, 50<<20)
	b.SetBytes(50 << 20)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		tr := NewTranscript()
		tl := &jsonl.Tail{Path: p}
		if _, err := tl.Read(context.Background(), tr.Add); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIncrementalLine appends one assistant line to a 50 MB transcript already
// read and polls (target ≤ 1 ms per line).
func BenchmarkIncrementalLine(b *testing.B) {
	p := filepath.Join(b.TempDir(), "big.jsonl")
	writeBigTranscript(b, p, 50<<20)
	tr := NewTranscript()
	tl := &jsonl.Tail{Path: p}
	if _, err := tl.Read(context.Background(), tr.Add); err != nil {
		b.Fatal(err)
	}
	f, _ := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
	defer f.Close()
	tb := prices.Default()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fmt.Fprintf(f, `{"type":"assistant","isSidechain":false,"requestId":"rn%d","message":{"id":"new_%d","model":"claude-sonnet-4-5","content":[{"type":"text","text":"line %d"}],"usage":{"input_tokens":3,"output_tokens":4,"cache_read_input_tokens":100,"cache_creation_input_tokens":0}}}`+"\n", i, i, i)
		if n, err := tl.Read(context.Background(), tr.Add); err != nil || n != 1 {
			b.Fatal(n, err)
		}
		_ = tb.Usage(tr.ByModel())
	}
}
