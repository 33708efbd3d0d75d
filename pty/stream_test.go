package pty_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"orcr/pty"
)

// syncBuffer is a bytes.Buffer safe for a writer and a poller.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// waitOut waits until the stream output contains want.
func waitOut(t *testing.T, b *syncBuffer, want string) {
	t.Helper()
	waitFor(t, "stream output "+want, func() (bool, string) {
		s := b.String()
		return strings.Contains(s, want), s
	})
}

// TestStreamFanOut attaches two clients to one pane: both get the redraw and every
// later byte, input from either reaches the program, and each ends on its own.
func TestStreamFanOut(t *testing.T) {
	h := newHost(t, pty.Options{})
	info := launch(t, h, "sh", "-c", `printf '\033[?2004h\033[1mbold-before\033[0m\n'; exec cat`)
	waitText(t, h, info.ID, 0, "bold-before")

	// Client A: input through an io.Pipe (no deadlines).
	inA, feedA := io.Pipe()
	outA := &syncBuffer{}
	ctxA, cancelA := context.WithCancel(context.Background())
	doneA := make(chan error, 1)
	go func() { doneA <- h.Stream(ctxA, info.ID, inA, outA) }()
	// Client B: input through a net.Pipe (SetReadDeadline lets Stream stop its reader).
	inB, feedB := net.Pipe()
	outB := &syncBuffer{}
	ctxB, cancelB := context.WithCancel(context.Background())
	doneB := make(chan error, 1)
	go func() { doneB <- h.Stream(ctxB, info.ID, inB, outB) }()
	t.Cleanup(func() { cancelA(); cancelB(); feedA.Close(); feedB.Close() })

	for _, out := range []*syncBuffer{outA, outB} {
		waitOut(t, out, "bold-before")
		if s := out.String(); !strings.Contains(s, "\x1b[?2004h") || !strings.Contains(s, "\x1b[1m") {
			t.Errorf("redraw lacks the bracketed paste mode or the bold style: %q", s)
		}
	}
	if _, err := feedA.Write([]byte("from-a\r")); err != nil {
		t.Fatal(err)
	}
	if _, err := feedB.Write([]byte("from-b\r")); err != nil {
		t.Fatal(err)
	}
	for _, out := range []*syncBuffer{outA, outB} {
		waitOut(t, out, "from-a")
		waitOut(t, out, "from-b")
	}
	// Raw passthrough: ctrl-] is not a detach key here; it reaches the program (the
	// tty echoes it as ^]) and the stream goes on.
	if _, err := feedB.Write([]byte("x\x1dy\r")); err != nil {
		t.Fatal(err)
	}
	waitText(t, h, info.ID, 0, "x^]y")
	waitOut(t, outB, "x^]y")
	cancelB()
	if err := <-doneB; !errors.Is(err, context.Canceled) {
		t.Errorf("B ended with %v, want context.Canceled", err)
	}
	if _, err := feedA.Write([]byte("after-b\r")); err != nil {
		t.Fatal(err)
	}
	waitOut(t, outA, "after-b")
	waitText(t, h, info.ID, 0, "after-b")
	cancelA()
	if err := <-doneA; !errors.Is(err, context.Canceled) {
		t.Errorf("A ended with %v, want context.Canceled", err)
	}
}

// TestStreamEndsOnExit checks that a stream delivers the program's last output and
// returns nil when the process exits.
func TestStreamEndsOnExit(t *testing.T) {
	h := newHost(t, pty.Options{})
	info := launch(t, h, "sh", "-c", `stty -echo; echo ready; read x; echo "bye-$x"; exit 0`)
	waitText(t, h, info.ID, 0, "ready")
	in, feed := io.Pipe()
	defer feed.Close()
	out := &syncBuffer{}
	done := make(chan error, 1)
	go func() { done <- h.Stream(context.Background(), info.ID, in, out) }()
	waitOut(t, out, "ready")
	if _, err := feed.Write([]byte("now\r")); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("stream ended with %v, want nil on exit", err)
	}
	if !strings.Contains(out.String(), "bye-now") {
		t.Errorf("last output missing: %q", out.String())
	}
	// Attaching to the dead pane still shows its last screen, then ends.
	out2 := &syncBuffer{}
	if err := h.Stream(context.Background(), info.ID, strings.NewReader(""), out2); err != nil {
		t.Errorf("stream of a dead pane: %v", err)
	}
	if !strings.Contains(out2.String(), "bye-now") {
		t.Errorf("redraw of a dead pane lacks its last screen: %q", out2.String())
	}
}

func TestStreamUnknownPane(t *testing.T) {
	h := newHost(t, pty.Options{})
	err := h.Stream(context.Background(), "p99", strings.NewReader(""), io.Discard)
	if !errors.Is(err, pty.ErrUnknownPane) {
		t.Errorf("stream of an unknown pane: %v", err)
	}
}

// TestStreamOutputOnly checks a stream with no input: it still mirrors the output.
func TestStreamOutputOnly(t *testing.T) {
	h := newHost(t, pty.Options{})
	info := launch(t, h, "sh", "-c", `echo first; read x; echo "second-$x"; exec cat`)
	waitText(t, h, info.ID, 0, "first")
	out := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.Stream(ctx, info.ID, nil, out) }()
	waitOut(t, out, "first")
	if err := h.SendText(context.Background(), info.ID, "x\n"); err != nil {
		t.Fatal(err)
	}
	waitOut(t, out, "second-x")
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("stream ended with %v", err)
	}
	// Neither input nor output: must not panic, ends with its (already done) context.
	if err := h.Stream(ctx, info.ID, nil, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("stream with nil reader and writer: %v", err)
	}
}
