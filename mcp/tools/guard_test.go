package tools

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
)

type bufCloser struct {
	mu sync.Mutex
	bytes.Buffer
}

func (b *bufCloser) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Buffer.Write(p)
}
func (b *bufCloser) Close() error { return nil }

// guardRun feeds in through a guard and returns what reached the MCP server and what
// the guard answered itself.
func guardRun(in []byte) (passed []string, answered string) {
	out := &bufCloser{}
	g := newGuard(bytes.NewReader(in), out, func() {})
	sc := bufio.NewScanner(g.pr)
	sc.Buffer(make([]byte, 64<<10), MaxMessage+2)
	for sc.Scan() {
		passed = append(passed, sc.Text())
	}
	io.Copy(io.Discard, g.pr)
	out.mu.Lock()
	defer out.mu.Unlock()
	return passed, out.String()
}

// FuzzGuard: whatever a client writes, the guard passes on only JSON-RPC 2.0 objects,
// one per line, and answers everything else with JSON-RPC errors that are JSON.
func FuzzGuard(f *testing.F) {
	f.Add([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n{not json\n[1,2]\n"))
	f.Add([]byte(`{"jsonrpc":"2.0","id":{"a":1},"method":"x"}` + "\n" + `{"foo":1}`))
	f.Add([]byte("\n\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		passed, answered := guardRun(in)
		for _, l := range passed {
			if !json.Valid([]byte(l)) || !isObject([]byte(l)) {
				t.Fatalf("passed on %q", l)
			}
		}
		for _, l := range strings.Split(strings.TrimSpace(answered), "\n") {
			if l != "" && !json.Valid([]byte(l)) {
				t.Fatalf("answered %q", l)
			}
		}
	})
}

// TestGuardSkipsAnOverlongLine: a line over MaxMessage is answered and skipped without
// being kept whole, and the next line still goes through.
func TestGuardSkipsAnOverlongLine(t *testing.T) {
	in := append(bytes.Repeat([]byte("x"), MaxMessage+10), '\n')
	in = append(in, []byte(`{"jsonrpc":"2.0","id":2,"method":"ping"}`+"\n")...)
	passed, answered := guardRun(in)
	if len(passed) != 1 || !strings.Contains(passed[0], `"id":2`) || !strings.Contains(answered, "-32600") {
		t.Fatalf("passed %d lines, answered %q", len(passed), answered)
	}
}
