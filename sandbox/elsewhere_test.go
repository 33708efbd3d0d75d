package sandbox

import (
	"context"
	"errors"
	"strings"
	"testing"

	"orcr/core"
	"orcr/core/wire"
)

// lookupKernel is a kernel whose only capability is "nodes".
type lookupKernel struct {
	core.Kernel
	nodes any
}

func (k lookupKernel) Lookup(name string) (any, bool) {
	if name == "nodes" && k.nodes != nil {
		return k.nodes, true
	}
	return nil, false
}

// confinesOn says a spawn may be confined elsewhere when it is pinned to node.
type confinesOn string

func (n confinesOn) ConfinesElsewhere(p wire.RunParams) bool { return p.Node == string(n) }

// The Landlock a server confines with is its kernel's capped by ORCR_SANDBOX_MAX_ABI,
// or the reason it has none; a sandboxed spawn this kernel cannot confine passes the
// spawn check only when the nodes feature says another machine may confine it.
func TestLandlockAndElsewhere(t *testing.T) {
	for _, c := range []struct {
		kernel, max, want int
	}{{7, 0, 7}, {7, 3, 3}, {2, 5, 2}, {99, 0, 11}} {
		f := New(Options{MaxABI: c.max, KernelABI: func() (int, error) { return c.kernel, nil }})
		if got, err := f.Landlock(); err != nil || got != c.want {
			t.Errorf("kernel %d, max %d: %d, %v; want %d", c.kernel, c.max, got, err, c.want)
		}
	}
	if _, err := New(Options{MaxABI: NoLandlock, KernelABI: func() (int, error) { return 7, nil }}).Landlock(); err == nil ||
		!strings.Contains(err.Error(), "ORCR_SANDBOX_MAX_ABI=0") {
		t.Fatalf("Landlock switched off: %v", err)
	}

	f := New(Options{Home: t.TempDir(), Self: "/usr/bin/orcr", KernelABI: func() (int, error) {
		return 0, errors.New("this kernel has no Landlock (test)")
	}})
	f.k = lookupKernel{nodes: confinesOn("big")}
	on := &wire.Sandbox{Mode: wire.SandboxOn}
	if err := f.CheckSpawn(context.Background(), wire.RunParams{Path: "a", Node: "big", Sandbox: on}); err != nil {
		t.Fatalf("a spawn node big confines was refused for this kernel: %v", err)
	}
	if err := f.CheckSpawn(context.Background(), wire.RunParams{Path: "a", Node: "small", Sandbox: on}); err == nil || !strings.Contains(err.Error(), "no Landlock (test)") {
		t.Fatalf("a spawn no other machine confines: %v", err)
	}
	f.k = lookupKernel{}
	if err := f.CheckSpawn(context.Background(), wire.RunParams{Path: "a", Node: "big", Sandbox: on}); err == nil {
		t.Fatal("without the nodes feature a sandboxed spawn passed on a kernel without Landlock")
	}
}
