package confine

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkTrackerRefresh is the server's per-spawn look at a folder granted entry by
// entry (a /tmp that holds orcr's home): 250 entries, none changed since the last
// look (its watch has no event: no listing); unwatched, each look lists the folder.
func BenchmarkTrackerRefresh(b *testing.B) {
	dir := b.TempDir()
	for i := range 250 {
		p := filepath.Join(dir, fmt.Sprintf("entry-%03d-%s", i, "abcdefgh"))
		if i%2 == 0 {
			if err := os.Mkdir(p, 0o700); err != nil {
				b.Fatal(err)
			}
		} else if err := os.WriteFile(p, nil, 0o600); err != nil {
			b.Fatal(err)
		}
	}
	for _, watched := range []bool{true, false} {
		b.Run(fmt.Sprintf("watched=%v", watched), func(b *testing.B) {
			tr := &tracker{dir: dir, watched: watched}
			defer tr.close()
			if _, err := tr.refresh(); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				moved, err := tr.refresh()
				if err != nil || len(moved) > 0 || len(tr.m) != 250 {
					b.Fatalf("refresh: %v moved %d, %d tracked", err, len(moved), len(tr.m))
				}
			}
		})
	}
}
