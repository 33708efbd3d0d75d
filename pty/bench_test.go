package pty_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"orcr/core"
	"orcr/pty"
)

// BenchmarkRead reads a full 200x50 screen.
func BenchmarkRead(b *testing.B) {
	h := newHost(b, pty.Options{})
	info := launch(b, h, "sh", "-c", `i=0; while [ $i -lt 49 ]; do printf '%0200d' $i; i=$((i+1)); done; printf 'full'; exec cat`)
	waitText(b, h, info.ID, 0, "full")
	ctx := context.Background()
	for b.Loop() {
		s, err := h.Read(ctx, info.ID, core.ReadOpts{})
		if err != nil || len(s.Text) < 200*49 {
			b.Fatalf("read: %d bytes, %v", len(s.Text), err)
		}
	}
}

// BenchmarkReadScrollback reads the last 1000 lines of a full 5000-line scrollback.
func BenchmarkReadScrollback(b *testing.B) {
	h := newHost(b, pty.Options{})
	info := launch(b, h, "sh", "-c", `i=0; while [ $i -lt 6000 ]; do echo "line $i $i $i $i $i $i $i $i"; i=$((i+1)); done; echo all-done; exec cat`)
	waitText(b, h, info.ID, 0, "all-done")
	ctx := context.Background()
	for b.Loop() {
		if _, err := h.Read(ctx, info.ID, core.ReadOpts{Lines: 1000}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLaunch launches `true` and closes the pane.
func BenchmarkLaunch(b *testing.B) {
	h := newHost(b, pty.Options{})
	ctx := context.Background()
	dir := b.TempDir()
	for b.Loop() {
		info, err := h.Launch(ctx, core.LaunchSpec{Argv: []string{"true"}, Env: env(), Cwd: dir})
		if err != nil {
			b.Fatal(err)
		}
		if err := h.Close(ctx, info.ID); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSendKeys presses enter in a cat pane.
func BenchmarkSendKeys(b *testing.B) {
	h := newHost(b, pty.Options{})
	info := launch(b, h, "cat")
	ctx := context.Background()
	for b.Loop() {
		if err := h.SendKeys(ctx, info.ID, "x", "enter"); err != nil && !strings.Contains(err.Error(), "unknown") {
			b.Fatal(err)
		}
	}
	_ = fmt.Sprint()
}
