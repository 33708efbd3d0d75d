package herdr

import (
	"context"
	"testing"

	"orcr/core"
)

// BenchmarkPing is one herdr round trip: connect, request, reply, close.
func BenchmarkPing(b *testing.B) {
	srv, _ := benchServer(b)
	c := &client{socket: srv}
	ctx := context.Background()
	for b.Loop() {
		if err := c.call(ctx, "ping", nil, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRead reads an 80x24 screen through pane.read.
func BenchmarkRead(b *testing.B) {
	_, env := benchServer(b)
	h, err := New(context.Background(), Options{Env: env})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Shutdown(context.Background())
	info, err := h.Launch(context.Background(), core.LaunchSpec{Name: "bench", Argv: []string{"sh", "-c", "seq 1 100; exec cat"},
		Env: []string{"PATH=/usr/bin:/bin"}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		if _, err := h.Read(ctx, info.ID, core.ReadOpts{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLaunchClose starts and closes one argv pane through layout.apply.
func BenchmarkLaunchClose(b *testing.B) {
	_, env := benchServer(b)
	h, err := New(context.Background(), Options{Env: env})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Shutdown(context.Background())
	ctx := context.Background()
	spec := core.LaunchSpec{Name: "bench", Argv: []string{"cat"}, Env: []string{"PATH=/usr/bin:/bin"}}
	for b.Loop() {
		info, err := h.Launch(ctx, spec)
		if err != nil {
			b.Fatal(err)
		}
		if err := h.Close(ctx, info.ID); err != nil {
			b.Fatal(err)
		}
	}
}
