package store

import (
	"testing"
)

func BenchmarkAppendEvent(b *testing.B) {
	ctx := b.Context()
	s := openT(b, b.TempDir())
	a := sampleAgent(1)
	e := sampleEvent(1, &a)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.AppendEvent(ctx, e); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendEventParallel shows what serialising appends costs under contention.
func BenchmarkAppendEventParallel(b *testing.B) {
	ctx := b.Context()
	s := openT(b, b.TempDir())
	a := sampleAgent(1)
	e := sampleEvent(1, &a)
	b.ReportAllocs()
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.AppendEvent(ctx, e); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func BenchmarkPutAgent(b *testing.B) {
	ctx := b.Context()
	s := openT(b, b.TempDir())
	a := sampleAgent(1)
	b.ReportAllocs()
	for b.Loop() {
		if err := s.PutAgent(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
}

func populate(b *testing.B, s *Store, n int) []string {
	b.Helper()
	ids := make([]string, n)
	for i := range n {
		a := sampleAgent(i)
		ids[i] = a.ID
		if err := s.PutAgent(b.Context(), a); err != nil {
			b.Fatal(err)
		}
	}
	return ids
}

func BenchmarkGetAgent(b *testing.B) {
	ctx := b.Context()
	s := openT(b, b.TempDir())
	ids := populate(b, s, 1000)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := s.GetAgent(ctx, ids[i%len(ids)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func BenchmarkListAgents1000(b *testing.B) {
	ctx := b.Context()
	dir := b.TempDir()
	s := openT(b, dir)
	populate(b, s, 1000)
	// Reopen so the records are read from the flushed LSM as after a restart, not only
	// from the memtable the writes just filled.
	s.Close()
	s = openT(b, dir)
	b.ReportAllocs()
	for b.Loop() {
		list, err := s.ListAgents(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if len(list) != 1000 {
			b.Fatalf("listed %d", len(list))
		}
	}
}

func BenchmarkEventsPage100(b *testing.B) {
	ctx := b.Context()
	s := openT(b, b.TempDir())
	for i := range 2000 {
		if _, err := s.AppendEvent(ctx, sampleEvent(i, nil)); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	var after uint64
	for b.Loop() {
		evs, err := s.Events(ctx, after, 100)
		if err != nil || len(evs) != 100 {
			b.Fatalf("%d events, %v", len(evs), err)
		}
		after = (after + 100) % 1900
	}
}

func BenchmarkOpen1000(b *testing.B) {
	dir := b.TempDir()
	s := openT(b, dir)
	populate(b, s, 1000)
	s.Close()
	b.ReportAllocs()
	for b.Loop() {
		s, err := Open(dir, nil)
		if err != nil {
			b.Fatal(err)
		}
		s.Close()
	}
}
