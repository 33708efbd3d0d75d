package store

import (
	"testing"

	"github.com/dgraph-io/ristretto/v2/z"
)

// Badger's table builders take their buffers from a z.AllocatorPool, which kept up to
// eight returned allocators, each as large as the biggest table it built, as live Go
// memory (4-7 MB after a 1,000-agent burst of events, counted by the GC as live and
// kept resident). orcr's ristretto (third_party) releases a returned allocator instead
// (poolAllocators): the next builder gets fresh buffers from the Go heap.
func TestTableBuildersAreNotPooled(t *testing.T) {
	pool := z.NewAllocatorPool(8)
	defer pool.Release()
	a := pool.Get(1<<20, "test")
	a.Allocate(64 << 10)
	pool.Return(a)
	b := pool.Get(1<<20, "test")
	defer b.Release()
	if a == b {
		t.Fatal("a returned allocator was handed out again: the pool keeps its buffers live")
	}
}
