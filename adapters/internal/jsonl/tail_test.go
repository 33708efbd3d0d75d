package jsonl

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func collect(t *testing.T, tl *Tail) ([]string, error) {
	t.Helper()
	var got []string
	_, err := tl.Read(context.Background(), func(l []byte) { got = append(got, string(l)) })
	return got, err
}

func appendFile(t *testing.T, p, s string) {
	t.Helper()
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(s); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func TestTailIncrementalAndTornLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.jsonl")
	tl := &Tail{Path: p}
	if _, err := collect(t, tl); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing file: %v", err)
	}
	appendFile(t, p, `{"a":1}`+"\n"+`{"b":`)
	got, err := collect(t, tl)
	if err != nil || len(got) != 1 || got[0] != `{"a":1}` {
		t.Fatalf("first read %q %v", got, err)
	}
	if tl.Offset() != 8 {
		t.Fatalf("offset %d, want 8 (torn line not consumed)", tl.Offset())
	}
	appendFile(t, p, `2}`+"\n\n"+`{"c":3}`+"\n")
	got, _ = collect(t, tl)
	if strings.Join(got, "|") != `{"b":2}|{"c":3}` {
		t.Fatalf("second read %q", got)
	}
	got, _ = collect(t, tl)
	if len(got) != 0 {
		t.Fatalf("nothing new expected, got %q", got)
	}
}

func TestTailHugeAndOverlongLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.jsonl")
	huge := `{"x":"` + strings.Repeat("a", 5<<20) + `"}`
	long := `{"y":"` + strings.Repeat("b", 3<<20) + `"}`
	appendFile(t, p, huge+"\n"+long+"\n"+`{"z":1}`+"\n")
	tl := &Tail{Path: p, MaxLine: 4 << 20}
	got, err := collect(t, tl)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != long || got[1] != `{"z":1}` || tl.Skipped != 1 {
		t.Fatalf("got %d lines, skipped %d", len(got), tl.Skipped)
	}
	// An over-long line still being written is skipped across polls.
	appendFile(t, p, `{"w":"`+strings.Repeat("c", 5<<20))
	if got, _ = collect(t, tl); len(got) != 0 {
		t.Fatalf("torn over-long line delivered")
	}
	appendFile(t, p, `"}`+"\n"+`{"v":2}`+"\n")
	if got, _ = collect(t, tl); len(got) != 1 || got[0] != `{"v":2}` {
		t.Fatalf("after over-long line: %q", got)
	}
}

func TestTailShrunkFileResets(t *testing.T) {
	p := filepath.Join(t.TempDir(), "t.jsonl")
	appendFile(t, p, `{"a":1}`+"\n"+`{"a":2}`+"\n")
	tl := &Tail{Path: p}
	collect(t, tl)
	os.WriteFile(p, []byte(`{"n":1}`+"\n"), 0o644)
	if _, err := collect(t, tl); !errors.Is(err, ErrShrunk) {
		t.Fatalf("want ErrShrunk, got %v", err)
	}
	if got, _ := collect(t, tl); len(got) != 1 || got[0] != `{"n":1}` {
		t.Fatalf("after reset: %q", got)
	}
}
